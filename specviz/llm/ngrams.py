"""Token n-gram counts for a real model: the corpus (Tiny Shakespeare by default) tokenized with the model's own
tokenizer, its bigrams and trigrams counted once and kept on disk under the git-ignored .cache/ngrams/, keyed by
the sha256 of the corpus and of the vocabulary.

A character model's tables are dense (V^2 and V^3 entries: 65^3 is 274k); a real model's would hold 49,152^3.
``SparseCounts`` keeps only the n-grams seen, sorted, so that a context's row is one binary search; the drafters
read both kinds through the same two members, ``row`` and ``evidence`` (specviz/drafters/bigram.py)."""

import hashlib
import json
from pathlib import Path

import numpy as np
import torch

CACHE_DIR = Path(__file__).resolve().parents[2] / ".cache" / "ngrams"  # git-ignored


class SparseCounts:
    """Counts of the n-grams seen, as sorted keys: key = context * V + next, the context itself a base-V
    number of n - 1 ids. Smoothed rows give every token some probability (q > 0, so p / q is always defined):
    one pseudo-count spread evenly over the vocabulary, where add-one would drown a row in 49,152 guesses."""

    def __init__(self, keys: np.ndarray, counts: np.ndarray, vocab_size: int):
        self.keys, self.counts, self.V = keys.astype(np.int64), counts.astype(np.int64), vocab_size
        self.cum = np.concatenate([[0], np.cumsum(self.counts)])  # evidence of a context: one subtraction

    def _range(self, context: tuple[int, ...]) -> tuple[int, int]:
        c = 0
        for t in context:
            c = c * self.V + int(t)
        return int(np.searchsorted(self.keys, c * self.V)), int(np.searchsorted(self.keys, (c + 1) * self.V))

    def evidence(self, context: tuple[int, ...]) -> int:
        """How often the context was seen followed by a token."""
        lo, hi = self._range(context)
        return int(self.cum[hi] - self.cum[lo])

    def row(self, context: tuple[int, ...]) -> torch.Tensor:
        """P(next | context), smoothed. (V,) float64"""
        lo, hi = self._range(context)
        total = float(self.cum[hi] - self.cum[lo])
        row = torch.full((self.V,), 1.0 / self.V, dtype=torch.float64)
        if hi > lo:
            nxt = torch.from_numpy(self.keys[lo:hi] % self.V)
            row.index_add_(0, nxt, torch.from_numpy(self.counts[lo:hi]).double())
        return row / (total + 1.0)


def count(ids: np.ndarray, n: int, V: int) -> SparseCounts:
    """The n-grams of a token sequence, counted. (N,) ids -> SparseCounts"""
    ids = ids.astype(np.int64)
    key = np.zeros(len(ids) - n + 1, dtype=np.int64)
    for j in range(n):
        key = key * V + ids[j : len(ids) - n + 1 + j]
    keys, counts = np.unique(key, return_counts=True)
    return SparseCounts(keys, counts, V)


def token_counts(tokenizer, corpus: Path, cache_dir: Path = CACHE_DIR) -> tuple[SparseCounts, SparseCounts]:
    """(bigram, trigram) counts of ``corpus`` in this tokenizer's ids, from the disk cache or counted and kept
    there. ValueError, one line, where the corpus is missing."""
    if not corpus.is_file():
        raise ValueError(f"the token n-gram tables are counted from the corpus, and {corpus} is missing")
    text = corpus.read_text(encoding="utf-8")
    h = hashlib.sha256(text.encode())
    h.update(json.dumps(tokenizer.pieces).encode())
    file = cache_dir / f"{h.hexdigest()[:32]}.npz"
    V = tokenizer.vocab_size
    if file.is_file():
        with np.load(file, allow_pickle=False) as f:
            return (SparseCounts(f["bigram_keys"], f["bigram_counts"], V),
                    SparseCounts(f["trigram_keys"], f["trigram_counts"], V))  # fmt: skip
    ids = np.asarray(tokenizer.encode(text), dtype=np.int64)
    bigram, trigram = count(ids, 2, V), count(ids, 3, V)
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = file.with_suffix(".tmp.npz")
    np.savez(tmp, bigram_keys=bigram.keys, bigram_counts=bigram.counts, trigram_keys=trigram.keys,
             trigram_counts=trigram.counts)  # fmt: skip
    tmp.replace(file)
    return bigram, trigram
