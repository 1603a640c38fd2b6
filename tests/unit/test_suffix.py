"""Suffix decoding: the suffix array finds exactly the occurrences a brute-force scan finds, the
context's direct search gives the same trees a suffix array over it gives, the candidate tree's frequencies are brute-force counts of each path's continuations, the tree grows
only while a path's empirical probability clears the threshold, and the drafter's notes say what
was matched, where, and what the tree held."""

import random

import numpy as np
import pytest
import torch

from specviz.drafters.base import tree_mask
from specviz.drafters.suffix import (
    ContextSearch,
    SuffixDrafter,
    SuffixIndex,
    candidate_tree,
    corpus_index,
    suffix_array,
)

TEXT = "the cat sat on the mat. the cat sat on the hat. the cat ran."


def ids(text: str) -> list[int]:
    return [ord(c) - 32 for c in text]  # printable ASCII: ids below 256


def brute_count(tokens: list[int], pattern: list[int], followed: bool = False) -> int:
    """Occurrences of pattern in tokens (followed by a token, if asked), by scanning."""
    m, n = len(pattern), len(tokens)
    return sum(tokens[i : i + m] == pattern for i in range(n - m + 1 - followed))


def test_suffix_array_sorts_every_suffix():
    rng = random.Random(0)
    for n in (0, 1, 2, 7, 64, 300):
        for alphabet in (2, 5, 65):
            text = np.array([rng.randrange(alphabet) for _ in range(n)], dtype=np.int64)
            assert suffix_array(text).tolist() == sorted(range(n), key=lambda i: text[i:].tolist())


def test_find_and_children_match_brute_force_counts():
    tokens = ids(TEXT)
    index = SuffixIndex(np.array(tokens))
    for m in range(1, 6):
        for start in range(len(tokens) - m + 1):
            pattern = tokens[start : start + m]
            lo, hi = index.find(pattern)
            assert hi - lo == brute_count(tokens, pattern)
            assert sorted(index.sa[lo:hi].tolist()) == [i for i in range(len(tokens)) if tokens[i : i + m] == pattern]
            assert index.count(index.root(pattern)) == brute_count(tokens, pattern, followed=True)
            assert index.occurs_followed(pattern) == (index.count(index.root(pattern)) > 0)
            kids = index.children(index.root(pattern))
            assert sum(n for _, n, _ in kids) == index.count(index.root(pattern))
            for t, n, (a, b, depth) in kids:
                assert n == b - a == brute_count(tokens, pattern + [t]) and depth == m + 1
            assert [-n for _, n, _ in kids] == sorted(-n for _, n, _ in kids)  # most frequent first
    assert index.find(ids("dog")) == (index.find(ids("dog"))[0],) * 2  # absent: an empty range


@pytest.mark.parametrize("make", [lambda t: SuffixIndex(np.array(t)), ContextSearch], ids=["suffix-array", "search"])
def test_longest_match_is_the_longest_suffix_with_a_continuation(make):
    tokens = ids(TEXT)
    index = make(tokens)
    for context in ("so the cat s", "a mat. the c", "xyz the h", "zzz", "the cat ran."):
        c = ids(context)
        match = index.longest_match(c, 8)
        want = max(m for m in range(0, 9) if m <= len(c) and (m == 0 or brute_count(tokens, c[-m:], True)))
        assert len(match) == want and match == c[len(c) - want :]
    assert index.longest_match(ids("so the cat s"), 3) == ids("t s")  # capped by max_match


@pytest.mark.parametrize("make", [lambda t: SuffixIndex(np.array(t)), ContextSearch], ids=["suffix-array", "search"])
def test_candidate_tree_counts_probabilities_and_threshold(make):
    tokens = ids(TEXT)
    index = make(tokens)
    context = ids("the ")  # followed by c, c, c, m, h (ties: lowest id first): "the " occurs 5 times with a next token
    tree = candidate_tree(index, context, k=4, max_match=4, min_prob=0.0, max_nodes=64)
    assert tree["match"] == context
    tokens_, parents = tree["tokens"], tree["parents"]
    tree_mask(parents)  # a valid depth-first tree
    for i, (t, p) in enumerate(zip(tokens_, parents, strict=True)):
        path = [t]
        while p != -1:
            path.insert(0, tokens_[p])
            p = parents[p]
        assert tree["frequency"][i] == brute_count(tokens, context + path)
        assert tree["probability"][i] == pytest.approx(tree["frequency"][i] / 5)
        assert tree["depth"][i] == len(path)
    first = [i for i, p in enumerate(parents) if p == -1]
    assert [tokens_[i] for i in first] == ids("chm") and [tree["frequency"][i] for i in first] == [3, 1, 1]
    # a threshold of 0.5 keeps only the paths at least half the occurrences follow: "cat"
    strict = candidate_tree(index, context, k=4, max_match=4, min_prob=0.5, max_nodes=64)
    assert strict["tokens"] == ids("cat ") and strict["parents"] == [-1, 0, 1, 2]
    assert strict["score"] == pytest.approx(0.6 * 4)
    assert candidate_tree(index, context, k=2, max_match=4, min_prob=0.0, max_nodes=3)["depth"] == [1, 2, 1]


def test_context_search_grows_the_trees_a_suffix_array_over_the_context_grows():
    """The drafter searches its own text directly (no index to keep up between drafts); over random
    texts, repetitive and not, and random knobs, its trees equal a suffix array's, node for node."""
    rng = random.Random(1)
    for _ in range(1500):
        n, alphabet = rng.randrange(1, 120), rng.choice([2, 3, 5, 65])
        text = [rng.randrange(alphabet) for _ in range(n)]
        if rng.random() < 0.5:  # a repeated phrase: long matches, deep trees
            text = (text[: rng.randrange(1, 10)] * 30)[:n]
        args = (rng.randrange(0, 6), rng.randrange(1, 17), rng.choice([0.0, 0.1, 0.3]), rng.randrange(1, 20))
        assert candidate_tree(ContextSearch(text), text, *args) == candidate_tree(
            SuffixIndex(np.array(text)), text, *args
        )


def test_drafter_picks_the_better_source_and_notes_it():
    prompt = ids("the cat sat on the mat. the cat sat on the")
    corpus = SuffixIndex(np.array(ids("on the hat, on the hat, on the hat")))
    d = SuffixDrafter(corpus, max_match=16, min_prob=0.1, max_nodes=16)
    draft = d.draft(prompt, 4, 0.0, torch.Generator())
    n = draft.notes
    assert draft.q is None and n["source"] in ("context", "corpus")
    assert n["scores"][n["source"]] == max(n["scores"].values())
    assert n["matched_length"] == len(n["matched_suffix"]) and prompt[-n["matched_length"] :] == n["matched_suffix"]
    assert [e["token"] for e in n["tree"]] == draft.tokens and all(e["frequency"] >= 1 for e in n["tree"])
    assert max(draft.depths) <= 4 and len(draft.tokens) <= 16
    # the context searched is the one asked about, each round's emitted tokens included
    assert d.draft(prompt + ids(" mat"), 4, 0.0, torch.Generator()).notes["matched_lengths"]["context"] >= 8


def test_corpus_index_is_the_training_split_and_cached(target, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("First Citizen:\nBefore we proceed any further, hear me speak.\n" * 3)
    chars = target.tokenizer.chars
    a = corpus_index(corpus, chars, tmp_path / "cache")
    assert len(a) == int(0.9 * len(corpus.read_text()))
    assert [f.suffix for f in (tmp_path / "cache").iterdir()] == [".npy"]
    corpus_index.cache_clear()  # a new process: loads the array from disk
    b = corpus_index(corpus, chars, tmp_path / "cache")
    assert b is not a and b.sa.tolist() == a.sa.tolist()
    with pytest.warns(UserWarning, match="no corpus"):
        assert corpus_index(tmp_path / "missing.txt", chars, None) is None
    corpus_index.cache_clear()
