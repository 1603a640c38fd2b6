"""Trigram draft with bigram fallback (seed 000): P(next | prev, current), Laplace-smoothed.

Falls back to the bigram row when there is no previous token or when the context (prev,
current) was seen fewer than ``min_context_count`` times in training: a smoothed row built on
one or two observations is mostly prior, while the bigram row has thousands. The context rolls
over the last two tokens, drafted ones included.
"""

import torch

from specviz.drafters.base import Drafter, sample_chain
from specviz.drafters.bigram import BigramDrafter, counts_of


class TrigramDrafter(Drafter):
    name = "trigram"
    under_load = True  # the batch bench's n-gram
    summary = "character trigram counts, bigram fallback below min_context_count"
    paper = "the trigram post (Adding Trigram to Speculative Decoding)"
    bpe = True  # a real model's token trigrams, counted with its tokenizer (specviz/llm/ngrams.py)

    @classmethod
    def build(cls, src):
        ck, s = src.checkpoint, src.settings
        return cls(ck.bigram_counts, ck.trigram_counts, s.min_context_count)

    @classmethod
    def load(cls, settings, checkpoint):
        checkpoint.trigram_counts  # noqa: B018 (a real model's are counted now, once, or read from disk)

    def __init__(self, bigram_counts, trigram_counts, min_context_count: int = 2):
        self.bigram = BigramDrafter(bigram_counts)
        self.counts = counts_of(trigram_counts)  # (V, V, V) tensor, or SparseCounts
        self.min_context_count = min_context_count

    def next_dist(self, seq: list[int]) -> tuple[torch.Tensor, dict]:
        if len(seq) < 2:
            row, note = self.bigram.next_dist(seq)
            return row, {**note, "fallback": "no previous token"}
        a, b = seq[-2], seq[-1]
        evidence = self.counts.evidence((a, b))
        if evidence < self.min_context_count:
            row, note = self.bigram.next_dist(seq)
            fallback = f"context seen {evidence} < {self.min_context_count} times"
            return row, {**note, "fallback": fallback, "trigram_context": [a, b], "trigram_evidence": evidence}
        return self.counts.row((a, b)), {"row": "trigram", "context": [a, b], "evidence": evidence}

    def draft(self, context, k, temperature, gen):
        return sample_chain(self.next_dist, context, k, temperature, gen)
