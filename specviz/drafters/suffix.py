"""Suffix decoding (SuffixDecoding, Oliaro et al., 2024): draft a tree of continuations retrieved
from suffix indices, with no draft model.

Two sources: this generation's own text (prompt and generation so far), and a reference corpus
(the training split of Tiny Shakespeare, indexed once per process). For each, find the longest
suffix of the context, at most ``max_match`` tokens, that occurs earlier followed by some token;
every occurrence is a vote for what comes next. The candidate tree holds the continuations of those occurrences: a node's frequency is how
many occurrences continue with its path, and its score the path's empirical probability,
frequency / occurrences. The tree is grown best first, children by frequency, while that
probability is at least ``min_prob`` (at most k deep, ``max_nodes`` nodes), so its size adapts:
a long, unambiguous match grows one deep chain, a short, ambiguous one a few shallow branches, a
hopeless one nothing. Of the two trees, the one with the larger score (the sum of its nodes'
probabilities: the number of tokens it expects accepted) is drafted; its proposals are
deterministic and the lossless tree verifier walks them.

The corpus's index is a suffix array, not a suffix tree: the occurrences of a pattern are one
contiguous range of sorted suffixes (binary searches), and a node's children are the runs of the
next token within its parent's range, already sorted; the range sizes are exactly the occurrence
counts a suffix tree stores in its nodes, so the drafts are the ones a suffix tree gives, from two
flat int arrays that numpy builds in seconds and that can be saved without pickle. The generation's
own text is not indexed at all: it is a few thousand tokens at most and grows every round, so
``ContextSearch`` scans it with bytes.find (C speed, microseconds) when a draft is asked for. An
index rebuilt after every round cost ~0.5 ms a draft call, a third of a target pass, and an
online suffix tree would cost its upkeep in rounds that never draft; a scan gives the same
occurrences, and so the same trees, for nothing between drafts.
"""

import bisect
import functools
import hashlib
import math
import os
import warnings
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from models.tokenizer import CharTokenizer
from specviz.drafters.base import Draft, Drafter, grow_tree
from specviz.training.distill import DEFAULT_CORPUS
from specviz.training.train import split

CACHE_DIR = Path(__file__).resolve().parents[2] / ".cache" / "suffix"  # git-ignored


def suffix_array(text: np.ndarray, progress: bool = False) -> np.ndarray:
    """Start of every suffix of ``text`` in sorted order (a suffix that ends sorts before its
    extensions), by prefix doubling: sort by the first 2h tokens using the ranks of the first h.
    (n,) ints -> (n,) int64"""
    n = len(text)
    rank = np.unique(text, return_inverse=True)[1].astype(np.int64).reshape(-1)  # dense: every rank < n
    sa = np.argsort(rank, kind="stable")
    h = 1
    with tqdm(total=max(1, math.ceil(math.log2(max(n, 2)))), desc="suffix array", unit="pass",
              disable=None if progress else True, leave=False) as bar:  # fmt: skip
        while h < n:
            second = np.zeros(n, dtype=np.int64)  # 0: the suffix ends before 2h (sorts first)
            second[: n - h] = rank[h:] + 1
            key = rank * (n + 1) + second  # ranks are < n, so this fits in int64
            sa = np.argsort(key, kind="stable")
            k = key[sa]
            rank = np.empty(n, dtype=np.int64)
            rank[sa] = np.concatenate([[0], np.cumsum(k[1:] != k[:-1])])
            bar.update()
            if rank[sa[-1]] == n - 1:  # all distinct: sorted for good
                break
            h *= 2
    return sa


def pack(ids, width: int) -> bytes:
    """Token ids as bytes, ``width`` each, big-endian: byte order is then id order, so patterns compare as
    bytes. One byte an id for a vocabulary of at most 256 (the character model), four for a real model's."""
    return bytes(ids) if width == 1 else np.asarray(ids, dtype=">u4").tobytes()


def width_for(vocab_size: int) -> int:
    return 1 if vocab_size <= 256 else 4


class SuffixIndex:
    """A token sequence (ids packed ``width`` bytes each, so a pattern compares as bytes) and its suffix array."""

    def __init__(self, text: np.ndarray, sa: np.ndarray | None = None, width: int = 1):
        assert text.size == 0 or int(text.max()) < 256**width
        self.text = text.astype(np.int64)  # (n,)
        self.w = width
        self.bytes = pack(text.astype(np.int64).tolist(), width) if width > 1 else text.astype(np.uint8).tobytes()
        self.sa = suffix_array(self.text) if sa is None else sa  # (n,)

    def __len__(self) -> int:
        return len(self.text)

    def find(self, pattern: list[int]) -> tuple[int, int]:
        """The range [lo, hi) of suffixes that start with ``pattern``: its occurrences."""
        w = self.w
        p, m, sa = pack(pattern, w), len(pattern) * w, self.sa
        lo = bisect.bisect_left(sa, p, key=lambda i: self.bytes[i * w : i * w + m])
        hi = bisect.bisect_right(sa, p, lo=lo, key=lambda i: self.bytes[i * w : i * w + m])
        return lo, hi

    def root(self, match: list[int]) -> tuple[int, int, int]:
        """The candidate tree's root state for a matched suffix: (lo, hi, depth) of its occurrences."""
        return (*self.find(match), len(match))

    def children(self, state: tuple[int, int, int]) -> list[tuple[int, int, tuple[int, int, int]]]:
        """The tokens that follow the occurrences in [lo, hi), which share their first ``depth``
        tokens: (token, occurrences, the child's state) per child, most frequent first (ties:
        lowest token)."""
        lo, hi, depth = state
        if lo < hi and self.sa[lo] + depth == len(self.text):
            lo += 1  # the occurrence that ends the text (it sorts first) has no next token
        nxt = self.text[self.sa[lo:hi] + depth]  # sorted: the ranges of the children
        cut = np.flatnonzero(nxt[1:] != nxt[:-1]) + 1
        starts, ends = [0, *cut.tolist()], [*cut.tolist(), hi - lo]
        kids = (
            [(int(nxt[a]), b - a, (lo + a, lo + b, depth + 1)) for a, b in zip(starts, ends, strict=True)]
            if hi > lo
            else []
        )
        return sorted(kids, key=lambda c: (-c[1], c[0]))

    def count(self, state: tuple[int, int, int]) -> int:
        """Occurrences in a state followed by a token: all but the one that ends the text, if any."""
        lo, hi, depth = state
        return hi - lo - (lo < hi and int(self.sa[lo]) + depth == len(self.text))

    def occurs_followed(self, pattern: list[int]) -> bool:
        """Whether ``pattern`` occurs followed by a token: one binary search. The occurrence that
        ends the text, if any, sorts first among the pattern's; the next one then decides."""
        w = self.w
        p, m, sa = pack(pattern, w), len(pattern), self.sa
        i = bisect.bisect_left(sa, p, key=lambda j: self.bytes[j * w : (j + m) * w])
        if i < len(sa) and sa[i] + m == len(self.text):
            i += 1
        return i < len(sa) and self.bytes[sa[i] * w : (sa[i] + m) * w] == p

    def longest_match(self, context: list[int], max_len: int) -> list[int]:
        return longest_match(self, context, max_len)


class ContextSearch:
    """The generation's own text, searched as it is: the same root/children/count as a
    SuffixIndex over it, the occurrences found by bytes.find. A state is the list of positions of
    the tokens that follow a path's occurrences (those that have one)."""

    def __init__(self, tokens: list[int], width: int = 1):
        self.tokens, self.w = tokens, width
        self.bytes = pack(tokens, width)  # a pattern compares as bytes

    def starts(self, pattern: list[int]) -> list[int]:
        """Where ``pattern`` occurs followed by a token (overlapping occurrences too), in tokens."""
        w = self.w
        p, end, out = pack(pattern, w), len(self.bytes) - w, []
        i = self.bytes.find(p, 0, end)  # within [0, end): a token follows
        while i >= 0:
            if i % w == 0:  # wider ids: a match must start on an id's first byte
                out.append(i // w)
            i = self.bytes.find(p, i + 1, end)
        return out

    def count(self, state: list[int]) -> int:
        return len(state)  # a state holds only the occurrences that a token follows

    def occurs_followed(self, pattern: list[int]) -> bool:
        return (
            bool(self.starts(pattern)) if self.w > 1 else self.bytes.find(bytes(pattern), 0, len(self.bytes) - 1) >= 0
        )

    def longest_match(self, context: list[int], max_len: int) -> list[int]:
        return longest_match(self, context, max_len)

    def root(self, match: list[int]) -> list[int]:
        return [i + len(match) for i in self.starts(match)]

    def children(self, state: list[int]) -> list[tuple[int, int, list[int]]]:
        """(token, occurrences, the child's state) per token that follows, most frequent first
        (ties: lowest token), as SuffixIndex.children."""
        text, n, groups = self.tokens, len(self.tokens), {}
        for i in state:
            groups.setdefault(text[i], []).append(i + 1)
        kids = [(t, len(g), g if g[-1] < n else g[:-1]) for t, g in groups.items()]  # the text's end: no next token
        return sorted(kids, key=lambda c: (-c[1], c[0]))


def longest_match(index, context: list[int], max_len: int) -> list[int]:
    """The longest suffix of ``context`` (at most max_len tokens) that occurs in ``index`` followed
    by a token. If a suffix does, every shorter one does too, so a binary search on the length."""
    lo, hi = 0, min(max_len, len(context))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if index.occurs_followed(context[-mid:]) else (lo, mid - 1)
    return [int(t) for t in context[len(context) - lo :]]


def corpus_ids(path: Path, chars: str, tokenizer=None) -> np.ndarray:
    """The training split (nanoGPT's first 90%, as specviz.training.train.split) as token ids, encoded
    by the character tokenizer whose vocabulary is ``chars`` (a checkpoint's), or by ``tokenizer``."""
    text = path.read_text(encoding="utf-8")
    return split(np.array((tokenizer or CharTokenizer(chars)).encode(text), dtype=np.int64))[0]


@functools.cache
def corpus_index(
    path: Path = DEFAULT_CORPUS, chars: str = "", cache_dir: Path | None = CACHE_DIR, tokenizer=None, width: int = 1
) -> SuffixIndex | None:
    """The corpus's index, built once per process (a few seconds) and kept on disk under
    ``cache_dir`` keyed by the sha256 of the token ids (so a new corpus or vocabulary builds
    afresh). None when the corpus file is missing: suffix decoding then uses the context alone."""
    if not path.exists():
        warnings.warn(f"suffix decoding: no corpus at {path}; drafting from the context only", stacklevel=2)
        return None
    ids = corpus_ids(path, chars, tokenizer)
    if cache_dir is None:
        return SuffixIndex(ids, suffix_array(ids, progress=True), width)
    key = ids.astype(np.uint8).tobytes() if width == 1 else pack(ids.tolist(), width)
    file = cache_dir / f"{hashlib.sha256(key).hexdigest()}.npy"
    if file.exists():
        sa = np.load(file, allow_pickle=False)
        if sa.shape == ids.shape:
            return SuffixIndex(ids, sa, width)
    sa = suffix_array(ids, progress=True)
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = file.with_suffix(f".{os.getpid()}.tmp")  # one per process: test workers may build it at once
    with open(tmp, "wb") as f:
        np.save(f, sa.astype(np.int32), allow_pickle=False)
    tmp.replace(file)
    return SuffixIndex(ids, sa, width)


def candidate_tree(index: "SuffixIndex | ContextSearch", context: list[int], k: int, max_match: int,
                   min_prob: float, max_nodes: int) -> dict:  # fmt: skip
    """The candidate tree one index offers for this context: the matched suffix, its tokens,
    parents, frequencies, probabilities, and score (the sum of the probabilities)."""
    match = index.longest_match(context, max_match)
    tokens, parents, nodes = [], [], []
    if match:
        root = index.root(match)
        total = index.count(root)  # the match's occurrences that a token follows

        def children(state):  # state: (occurrences of the node's path, the index's state for it)
            return [(t, n / total, (n, st)) for t, n, st in index.children(state[1])]

        tokens, parents, nodes = grow_tree(children, (total, root), k, max_nodes, min_prob)
    return {
        "match": match,
        "tokens": tokens,
        "parents": parents,
        "frequency": [n for _, _, (n, _) in nodes],
        "probability": [p for _, p, _ in nodes],
        "depth": [d for d, _, _ in nodes],
        "score": sum(p for _, p, _ in nodes),
    }


class SuffixDrafter(Drafter):
    name = "suffix"
    summary = "suffix indices over the context and the training corpus"
    paper = "SuffixDecoding (Oliaro et al., 2024)"
    preset = "A song's refrain"
    glossary = (
        "Suffix decoding drafts with no model at all: it finds the longest suffix of the text so far that "
        "occurred before, in this generation's own text or in the training corpus, and proposes a tree of what "
        "followed those occurrences, the most frequent continuations first. The tree grows only while a path's "
        "empirical probability stays high, so a long, unambiguous match (a refrain, a quote) drafts a deep chain "
        "and a vague one drafts little."
    )
    tree = True
    needs = frozenset({"corpus"})
    deterministic = True
    bpe = True  # a real model's ids packed four bytes each (pack), its corpus tokenized by its tokenizer
    # Per drafted token, in target forward units: each node of the two trees is a numpy pass over its
    # occurrences in the corpus, or a Python grouping of them in the context. A draft call in a round
    # grows from 194 us at K = 1 to 259 us at K = 5 (medians), ~0.015 a level against a
    # ~1.2 ms pass; 0.04, measured before the context search, is kept: a tree level holds ~2 nodes.
    draft_cost = 0.04
    # A call's fixed part: the longest matches (binary searches on the length, in the corpus's suffix
    # array and by bytes.find in the context) and the two trees' roots. A one-level draft call in an
    # idle round measured a median 194 us, and a shadow round +290 us over an idle one's 1206 us (11
    # presets, T = 0.8, 1 thread): adaptive K shadows every ceil((0.03 + 0.15 + 0.04) / 0.01)
    # = 22nd idle round.
    call_cost = 0.15

    @classmethod
    def build(cls, src):
        s = src.settings
        width = width_for(src.checkpoint.config.vocab_size)
        corpus = corpus_index(tokenizer=src.checkpoint.tokenizer, width=width)
        return cls(corpus, s.suffix_max_match, s.suffix_min_prob, s.suffix_max_nodes, width)

    def __init__(self, corpus: SuffixIndex | None, max_match: int = 16, min_prob: float = 0.1, max_nodes: int = 16,
                 width: int = 1):  # fmt: skip
        self.corpus, self.max_match, self.min_prob, self.max_nodes = corpus, max_match, min_prob, max_nodes
        self.width = width  # bytes an id (pack)

    def draft(self, context: list[int], k: int, temperature: float, gen: torch.Generator) -> Draft:
        args = (k, self.max_match, self.min_prob, self.max_nodes)
        trees = {"context": candidate_tree(ContextSearch(context, self.width), context, *args)}
        if self.corpus is not None:
            trees["corpus"] = candidate_tree(self.corpus, context, *args)
        source = max(trees, key=lambda s: (trees[s]["score"], s == "context"))  # ties: the context
        best = trees[source]
        tree = [{"token": t, "parent": p, "depth": d, "frequency": f, "probability": q}
                for t, p, d, f, q in zip(best["tokens"], best["parents"], best["depth"], best["frequency"],
                                         best["probability"], strict=True)]  # fmt: skip
        notes = {
            "source": source,
            "matched_suffix": best["match"],
            "matched_length": len(best["match"]),
            "tree": tree,
            "scores": {s: t["score"] for s, t in trees.items()},
            "matched_lengths": {s: len(t["match"]) for s, t in trees.items()},
        }
        return Draft(best["tokens"], best["parents"], None, notes)
