"""Target-distilled drafters: an n-gram table of what *the target* does after each short context
(models/distilled.py, built by ``python -m specviz distill``), instead of what Shakespeare wrote.

Look-up backs off from the longest context (up to L characters) seen at least
min_context_count times to shorter ones, down to the empty context.

    distilled        a chain. T = 0: the target's most frequent argmax after the context (one-hot
                     q). T > 0: drawn from the table's average distribution q, temperature-scaled
                     like the target's p, and that exact q goes to the verifier.
    distilled-tree   a token tree grown best first: expand the node with the highest cumulative
                     draft probability (the product of the table's q along its path), each with
                     its top 3 children (the target's mode first), until the node budget is
                     spent, at most K deep. Deterministic (one-hot q at every temperature), so
                     verification walks the tree with the lossless rule, as for the trie.
"""

import heapq

import torch

from models.distilled import DistilledTable
from specviz.drafters.base import Draft, Drafter, chain, depth_first
from specviz.sampling import draw, scale_probs

TREE_CHILDREN = 3


class DistilledDrafter(Drafter):
    name = "distilled"

    def __init__(self, table: DistilledTable, min_context_count: int = 2, max_context: int = 8):
        self.table = table
        self.min_count = min_context_count
        self.L = min(max_context, table.max_context)
        # Per generation (a drafter serves one), so nothing is shared between sessions: the same
        # contexts come back again and again, and a row's scaled q costs more than the look-up.
        self._q: dict[tuple[int, float], torch.Tensor] = {}

    def lookup(self, seq: list[int]) -> tuple[int, int]:
        return self.table.lookup(seq[-self.L :] if self.L else [], self.min_count)

    def scaled_q(self, row: int, temperature: float) -> torch.Tensor:
        q = self._q.get((row, temperature))
        if q is None:
            q = self._q[(row, temperature)] = scale_probs(self.table.q(row), temperature)
        return q

    def draft(self, context, k, temperature, gen):
        """T = 0: follow the target's mode (one-hot q). T > 0: sample each token from the row's q
        scaled by the temperature, and hand that very q to the verifier."""
        seq, tokens, qs, notes = list(context[-self.L :]), [], [], []
        for _ in range(k):
            row, L = self.lookup(seq)
            if temperature > 0:
                q = self.scaled_q(row, temperature)  # (V,)
                tok = draw(q, gen)
                qs.append(q)
            else:
                tok = self.table.mode[row]
            tokens.append(tok)
            notes.append({"context": L, "seen": self.table.counts[row]})
            seq.append(tok)
        q = torch.stack(qs) if qs else None  # (k, V)
        return chain(tokens, q, {"positions": notes})


class DistilledTreeDrafter(DistilledDrafter):
    name = "distilled-tree"
    deterministic = True

    def __init__(self, table: DistilledTable, min_context_count: int = 2, max_context: int = 8, nodes: int = 16):
        super().__init__(table, min_context_count, max_context)
        self.nodes = nodes
        self._kids: dict[int, list[tuple[int, float]]] = {}  # per generation, like _q

    def _children(self, seq: list[int]) -> list[tuple[int, float]]:
        """(token, q) of a node's top children, the target's mode first."""
        row, _ = self.lookup(seq)
        kids = self._kids.get(row)
        if kids is None:
            probs = dict(zip(*self.table.top(row), strict=True))
            kids = self._kids[row] = [(t, probs.get(t, 0.0)) for t in self.table.ranked(row)[:TREE_CHILDREN]]
        return kids

    def draft(self, context, k, temperature, gen):
        base = list(context[-self.L :])
        # Heap entries: (-cumulative q, rank path, token, the node's sequence). A child's
        # cumulative q never exceeds its parent's, so parents pop first.
        heap = [(-q, (r,), t, base + [t]) for r, (t, q) in enumerate(self._children(base))]
        heapq.heapify(heap)
        kept = []  # (rank path, token, cumulative q)
        while heap and len(kept) < self.nodes and k > 0:
            neg, ranks, tok, seq = heapq.heappop(heap)
            kept.append((ranks, tok, -neg))
            if len(ranks) < k:
                for r, (t, q) in enumerate(self._children(seq)):
                    heapq.heappush(heap, (neg * q, ranks + (r,), t, seq + [t]))
        order, parents = depth_first([ranks for ranks, *_ in kept])
        tokens = [kept[i][1] for i in order]
        tree = [{"token": t, "parent": p, "depth": len(kept[i][0]), "score": kept[i][2]}
                for t, p, i in zip(tokens, parents, order, strict=True)]  # fmt: skip
        return Draft(tokens, parents, None, {"tree": tree, "nodes": self.nodes})
