"""Bigram draft (seed 001): Laplace-smoothed P(next | current) from the training counts."""

import torch

from specviz.drafters.base import Drafter, sample_chain


def laplace(counts: torch.Tensor) -> torch.Tensor:
    """(+1 smoothing, rows normalised): no token ever has q = 0, so p/q is always defined."""
    smoothed = counts.double() + 1.0
    return smoothed / smoothed.sum(-1, keepdim=True)


class BigramDrafter(Drafter):
    name = "bigram"
    summary = "character bigram counts of the training split"
    paper = "the bigram-draft post (speculative decoding added to nanoGPT)"
    preset = "Free verse"

    @classmethod
    def build(cls, src):
        return cls(src.checkpoint.bigram_counts)

    def __init__(self, bigram_counts: torch.Tensor):
        self.table = laplace(bigram_counts)  # (V, V)
        self.row_counts = bigram_counts.sum(-1)  # (V,) evidence per current token

    def next_dist(self, seq: list[int]) -> tuple[torch.Tensor, dict]:
        cur = seq[-1]
        return self.table[cur], {"row": "bigram", "context": [cur], "evidence": int(self.row_counts[cur])}

    def draft(self, context, k, temperature, gen):
        return sample_chain(self.next_dist, context, k, temperature, gen)
