"""Prompt lookup decoding: draft by copying from the context itself.

Take the last few tokens of the context (an n-gram, longest first: max_ngram down to
min_ngram), find where they occurred earlier, and propose the tokens that followed that
occurrence. No model and no table: it works when the text repeats itself (quoting, code, lists).
This is transformers' ``prompt_lookup_num_tokens`` and vLLM's n-gram proposer; here the
earliest earlier occurrence is used, and the first n-gram size with a match wins.
"""

import torch

from specviz.drafters.base import Draft, Drafter, chain


def find_earliest(context: list[int], pattern: list[int]) -> int:
    """Start of the earliest occurrence of pattern followed by at least one token, or -1.
    Scans with list.index (C speed) for the first token, so a call is linear in the context."""
    size, last = len(pattern), len(context) - len(pattern) - 1  # last start that has a follower
    i = 0
    while i <= last:
        try:
            i = context.index(pattern[0], i, last + 1)
        except ValueError:
            return -1
        if context[i : i + size] == pattern:
            return i
        i += 1
    return -1


class PromptLookupDrafter(Drafter):
    name = "prompt-lookup"
    summary = "the longest matching n-gram earlier in the context"
    paper = "Prompt lookup decoding (Saxena, 2023)"
    preset = "Quote a passage"
    deterministic = True
    bpe = True  # ids compared as ids: any vocabulary

    @classmethod
    def build(cls, src):
        return cls(src.settings.lookup_max_ngram, src.settings.lookup_min_ngram)

    @classmethod
    def peer(cls, k):
        return {"prompt_lookup_num_tokens": k, "max_matching_ngram_size": 3}

    def __init__(self, max_ngram: int = 3, min_ngram: int = 1):
        assert 1 <= min_ngram <= max_ngram
        self.max_ngram = max_ngram
        self.min_ngram = min_ngram

    def draft(self, context: list[int], k: int, temperature: float = 0.0, gen: torch.Generator | None = None) -> Draft:
        context = list(context)
        if k > 0:
            for size in range(min(self.max_ngram, len(context) - 1), self.min_ngram - 1, -1):
                start = find_earliest(context, context[-size:])
                if start >= 0:
                    follow = start + size
                    tokens = context[follow : follow + k]  # may stop short at the end of the context
                    notes = {
                        "matched": True,
                        "ngram_size": size,
                        "ngram": context[-size:],
                        "match_start": start,
                        "tokens": tokens,
                    }
                    return chain(tokens, q=None, notes=notes)
        notes = {"matched": False, "ngram_size": None, "ngram": [], "match_start": None, "tokens": []}
        return chain([], q=None, notes=notes)
