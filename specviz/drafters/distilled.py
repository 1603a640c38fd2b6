"""Target-distilled drafters: an n-gram table of what *the target* does after each short context
(models/distilled.py, built by ``python -m specviz distill``), instead of what Shakespeare wrote.

Look-up backs off from the longest context (up to L characters) seen at least
min_context_count times to shorter ones, down to the empty context.

    distilled        a chain. T = 0: the target's most frequent argmax after the context (one-hot
                     q). T > 0: drawn from the table's average distribution q, temperature-scaled
                     like the target's p, and that exact q goes to the verifier. At T = 0 each row
                     also says how often the target's argmax was its mode (its agreement): the
                     chance that the drafted character is accepted, known before drafting it, by
                     which adaptive K stops the draft token by token (draft_until; adaptive.Stopper).
    distilled-tree   a token tree grown best first: expand the node with the highest cumulative
                     draft probability (the product of the table's q along its path), each with
                     its top 3 children (the target's mode first), until the node budget is
                     spent, at most K deep. Deterministic (one-hot q at every temperature), so
                     verification walks the tree with the lossless rule, as for the trie.
                     With --tree-shape sequoia the shape is fixed instead: Sequoia's tree for the
                     node budget and K, from this table's acceptance rates by sibling rank and depth
                     measured on the training split (specviz/adaptive/sequoia.py); each node's
                     children are still the table's ranked top characters.
"""

from itertools import accumulate
from pathlib import Path

import torch

from models.distilled import DistilledTable, load_table
from specviz.adaptive import sequoia
from specviz.core.sampling import draw_cumulative
from specviz.drafters.base import Draft, Drafter, chain, grow_tree
from specviz.training.distill import DEFAULT_CORPUS

TREE_CHILDREN = 3


class DistilledDrafter(Drafter):
    name = "distilled"
    summary = "a table of the target's own predictions after short contexts"
    paper = "target distillation, as DistillSpec (Zhou et al., 2024), in a lookup table"
    featured = True
    under_load = True

    @classmethod
    def load(cls, settings, checkpoint):
        load_table(checkpoint.path)  # built from this target, its sha256 as recorded

    @classmethod
    def build(cls, src):
        s = src.settings
        return cls(load_table(src.checkpoint.path), s.min_context_count, s.distilled_context)

    def __init__(self, table: DistilledTable, min_context_count: int = 2, max_context: int = 8):
        self.table = table
        self.min_count = min_context_count
        self.L = min(max_context, table.max_context)

    def lookup(self, seq: list[int]) -> tuple[int, int]:
        return self.table.lookup(seq[-self.L :] if self.L else [], self.min_count)

    def estimates(self, temperature):
        return temperature == 0  # the table's agreement is the chance that the target's argmax is the mode

    def draft(self, context, k, temperature, gen):
        """T = 0: follow the target's mode (one-hot q). T > 0: sample each token from the row's q
        scaled by the temperature, and hand that very q to the verifier."""
        return self.draft_until(context, k, temperature, gen, None)

    def draft_until(self, context, k, temperature, gen, go_on):
        table, tokens, qs, notes = self.table, [], [], []
        keys = table.keys(context[-self.L :] if self.L else [])  # of the context, then of it and the draft
        for _ in range(k):
            row, L = table.lookup_keys(keys, self.min_count)
            if go_on is not None and not go_on(table.agreement(row)):
                break
            if temperature > 0:
                # Made afresh: a context of up to L characters seldom comes back within a generation (a
                # cache of the rows missed 3446 times in 3464 drafted tokens; 11 presets, T = 0.8, K = 4).
                q = table.probs(row, temperature)  # (V,)
                tok = draw_cumulative(list(accumulate(q)), gen)
                qs.append(q)
            else:
                tok = table.mode[row]
            tokens.append(tok)
            notes.append({"context": L, "seen": table.counts[row]})
            keys = table.extend(keys, tok, self.L)
        q = torch.tensor(qs, dtype=torch.float64) if qs else None  # (k, V): the very numbers drawn from
        return chain(tokens, q, {"positions": notes})


class DistilledTreeDrafter(DistilledDrafter):
    name = "distilled-tree"
    summary = "the distilled table, a best-first tree"
    paper = "as distilled; trees as SpecInfer"
    featured = False  # Home's race opens with the chain
    under_load = False  # the batch bench times the chain
    tree = True
    deterministic = True
    shaped = True

    def estimates(self, temperature):
        return False  # a tree: its budget, not a stopping rule, bounds it

    @classmethod
    def build(cls, src):
        s = src.settings
        drafter = cls(load_table(src.checkpoint.path), s.min_context_count, s.distilled_context, s.distilled_nodes)
        if s.tree_shape == "sequoia":
            drafter.rates = drafter.sequoia_rates(src.checkpoint, s.temperature, s.k)
        return drafter

    def __init__(self, table: DistilledTable, min_context_count: int = 2, max_context: int = 8, nodes: int = 16):
        super().__init__(table, min_context_count, max_context)
        self.nodes = self.max_nodes = nodes
        self._kids: dict[int, list[tuple[int, float]]] = {}  # per generation: a drafter serves one
        self.rates: sequoia.Rates | None = None  # Sequoia's rates: the tree's shape is fixed (else grown)

    def sequoia_rates(self, checkpoint, temperature: float, depth: int, corpus: Path = DEFAULT_CORPUS) -> sequoia.Rates:
        """This table's acceptance rates by rank and depth (rounds at most ``depth`` deep) against the
        target at ``temperature``, measured on the training split once and kept on disk."""
        knobs = {"min_context_count": self.min_count, "distilled_context": self.L}
        return sequoia.drafter_rates(checkpoint, self.name, knobs, temperature, depth,
                                     lambda seq, d: self.table.ranked(self.lookup(seq)[0]),
                                     (Path(self.table.path),), corpus=corpus)  # fmt: skip

    def _children(self, seq: list[int], width: int = TREE_CHILDREN) -> list[tuple[int, float]]:
        """(token, q) of a node's top ``width`` children, the target's mode first."""
        row, _ = self.lookup(seq)
        kids = self._kids.get(row)
        if kids is None:
            probs = dict(zip(*self.table.top(row), strict=True))
            kids = self._kids[row] = [(t, probs.get(t, 0.0)) for t in self.table.ranked(row)]
        return kids[:width]

    def draft(self, context, k, temperature, gen):
        shape = None if self.rates is None else sequoia.optimal_tree(self.rates, self.nodes, k)
        return self.tree_draft(context, k, shape)

    def tree_draft(self, context, k: int, shape=None, temperature: float = 0.0, gen=None) -> Draft:
        """The tree for ``context``: grown best first (``shape`` None), or of the fixed ``shape`` (rank
        paths: Sequoia's), each node's children the table's ranked characters (deterministic at every
        temperature: ``temperature`` and ``gen`` are not used)."""
        width = TREE_CHILDREN if shape is None else sequoia.MAX_RANKS

        def children(state):  # state: (the node's sequence, its cumulative q)
            seq, score = state
            return [(t, score * q, (seq + [t], score * q)) for t, q in self._children(seq, width)]

        root = (list(context[-self.L :]), 1.0)
        if shape is None:
            tokens, parents, nodes = grow_tree(children, root, k, self.nodes)
        else:
            tokens, parents, nodes = sequoia.grow_shape(children, root, shape)
        tree = [{"token": t, "parent": p, "depth": d, "score": s}
                for t, p, (d, s, _) in zip(tokens, parents, nodes, strict=True)]  # fmt: skip
        return Draft(tokens, parents, None, {"tree": tree, "nodes": self.nodes,
                                             "shape": "dynamic" if shape is None else "sequoia"})  # fmt: skip
