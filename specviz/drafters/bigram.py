"""Bigram draft (seed 001): Laplace-smoothed P(next | current) from the training counts."""

import weakref

import torch

from specviz.drafters.base import Drafter, sample_chain


def laplace(counts: torch.Tensor) -> torch.Tensor:
    """(+1 smoothing, rows normalised): no token ever has q = 0, so p/q is always defined."""
    smoothed = counts.double() + 1.0
    return smoothed / smoothed.sum(-1, keepdim=True)


class DenseCounts:
    """The character model's counts, dense ((V,) * n int tensor), Laplace-smoothed; a real model's are sparse
    (specviz/llm/ngrams.py SparseCounts). Both give a context's row and its evidence."""

    def __init__(self, counts: torch.Tensor):
        self.table = laplace(counts)  # (V,) * n
        self.context_counts = counts.sum(-1)  # (V,) * (n - 1) evidence per context

    def row(self, context: tuple[int, ...]) -> torch.Tensor:
        return self.table[context]  # (V,)

    def evidence(self, context: tuple[int, ...]) -> int:
        return int(self.context_counts[context])


# One smoothed table per counts tensor, shared read-only by every drafter built on it: every sequence of a batch,
# every run of the app. Each building its own copied the trigram's V^3 doubles (2 MB) once a sequence, and B tables
# then shared the CPU's caches with the target's pass.
# Keyed by id (a tensor's == is elementwise), each entry dropped when its tensor is collected.
_DENSE: dict[int, "DenseCounts"] = {}


def counts_of(counts) -> "DenseCounts":
    """A checkpoint's counts as rows: a dense tensor wrapped (once a tensor), a real model's SparseCounts as they are."""
    if not isinstance(counts, torch.Tensor):
        return counts
    if (dense := _DENSE.get(id(counts))) is None:
        dense = _DENSE[id(counts)] = DenseCounts(counts)
        weakref.finalize(counts, _DENSE.pop, id(counts), None)
    return dense


class BigramDrafter(Drafter):
    name = "bigram"
    summary = "character bigram counts of the training split"
    paper = "the bigram-draft post (speculative decoding added to nanoGPT)"
    preset = "Free verse"
    bpe = True  # a real model's token bigrams, counted with its tokenizer (specviz/llm/ngrams.py)

    @classmethod
    def build(cls, src):
        return cls(src.checkpoint.bigram_counts)

    @classmethod
    def load(cls, settings, checkpoint):
        checkpoint.bigram_counts  # noqa: B018 (a real model's are counted now, once, or read from disk)

    def __init__(self, bigram_counts):
        self.counts = counts_of(bigram_counts)  # (V, V) tensor, or SparseCounts

    def next_dist(self, seq: list[int]) -> tuple[torch.Tensor, dict]:
        cur = seq[-1]
        return self.counts.row((cur,)), {"row": "bigram", "context": [cur], "evidence": self.counts.evidence((cur,))}

    def draft(self, context, k, temperature, gen):
        return sample_chain(self.next_dist, context, k, temperature, gen)
