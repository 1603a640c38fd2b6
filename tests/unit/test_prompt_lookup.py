import json
import random

import torch

from specviz.drafters.prompt_lookup import PromptLookupDrafter, find_earliest

#     0  1  2  3  4  5  6  7  8  9 10 11 12
CTX = [3, 5, 2, 3, 6, 1, 2, 3, 7, 0, 1, 2, 3]  # ends in 1,2,3; its 3-, 2- and 1-gram first occur at 5, 2, 0


def test_longest_ngram_wins():
    dr = PromptLookupDrafter(max_ngram=3).draft(CTX, 2, 1.0, torch.Generator())
    assert dr.tokens == [7, 0] and dr.is_chain and dr.q is None
    assert dr.notes == {"matched": True, "ngram_size": 3, "ngram": [1, 2, 3], "match_start": 5, "tokens": [7, 0]}
    dr = PromptLookupDrafter(max_ngram=2).draft(CTX, 2, 0.0, None)
    assert dr.tokens == [6, 1] and dr.notes["ngram_size"] == 2 and dr.notes["match_start"] == 2
    dr = PromptLookupDrafter(max_ngram=1).draft(CTX, 2, 0.0, None)
    assert dr.tokens == [5, 2] and dr.notes["ngram_size"] == 1 and dr.notes["match_start"] == 0


def test_falls_back_to_shorter():
    ctx = [4, 2, 3, 9, 1, 2, 3]  # [1,2,3] never occurred before; [2,3] did, at 1
    dr = PromptLookupDrafter(max_ngram=3).draft(ctx, 3, 0.0, None)
    assert dr.tokens == [9, 1, 2] and dr.notes["ngram_size"] == 2 and dr.notes["match_start"] == 1


def test_earliest_match_k_cap_and_truncation():
    ctx = [4, 1, 5, 4, 1, 6, 4, 1]  # [4,1] at 0 and 3: the earliest wins
    d = PromptLookupDrafter(max_ngram=2)
    assert d.draft(ctx, 3, 0.0, None).tokens == [5, 4, 1]
    assert d.draft(ctx, 1, 0.0, None).tokens == [5]
    dr = d.draft(ctx, 10, 0.0, None)  # only 6 tokens follow the match before the context ends
    assert dr.tokens == [5, 4, 1, 6, 4, 1] and dr.notes["match_start"] == 0
    # the match may overlap the final n-gram itself
    assert d.draft([7, 7, 7], 5, 0.0, None).tokens == [7]


def test_no_match():
    d = PromptLookupDrafter()
    for ctx in ([], [5], [1, 2, 3, 4]):
        dr = d.draft(ctx, 4, 0.0, None)
        assert dr.tokens == [] and dr.parents == []
        assert dr.notes == {"matched": False, "ngram_size": None, "ngram": [], "match_start": None, "tokens": []}
    assert d.draft([1, 2, 1], 0, 0.0, None).tokens == []  # k = 0
    # [2] occurred before, but min_ngram=2 asks for at least a bigram
    assert PromptLookupDrafter(min_ngram=1).draft([1, 2, 3, 2], 4, 0.0, None).tokens == [3, 2]
    assert PromptLookupDrafter(min_ngram=2).draft([1, 2, 3, 2], 4, 0.0, None).tokens == []
    json.dumps(d.draft(CTX, 3, 0.0, None).notes)


def test_find_earliest():
    assert find_earliest([1, 2, 1, 2], [1, 2]) == 0
    assert find_earliest([9, 1, 2], [1, 2]) == -1  # the only occurrence is the final one
    assert find_earliest([1, 1, 1, 2, 1, 1, 2], [1, 2]) == 2


class CountingList(list):
    """A list that counts the slices taken of it: find_earliest's work, without a clock."""

    slices = 0

    def __getitem__(self, key):
        if isinstance(key, slice):
            CountingList.slices += 1
        return super().__getitem__(key)


def naive_earliest(context, pattern):
    size = len(pattern)
    return next((i for i in range(len(context) - size) if context[i : i + size] == pattern), -1)


def test_long_context_is_one_linear_scan():
    """Many first-token hits to reject: the answers are the brute force's, and the work (slices
    compared) stays within one pass over the context. Speed itself belongs in benchmarks."""
    rng = random.Random(0)
    ctx = [rng.randrange(8) for _ in range(4000)]  # small vocab: many first-token hits to reject
    for i in range(0, 100, 7):
        for size in (1, 2, 4):
            c = CountingList(ctx[: 3900 + i])
            CountingList.slices = 0
            pattern = list(c)[-size:]
            assert find_earliest(c, pattern) == naive_earliest(list(c), pattern)
            assert CountingList.slices <= 1 + list(c).count(pattern[0])  # a slice only where the first token hits
