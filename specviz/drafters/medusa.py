"""Medusa (Cai et al., 2024, arXiv 2401.10774): the target drafts for itself with extra heads on
its own top-layer feature (models/medusa.py), and the candidates form a tree.

Which feature. After ``sync`` the target's cache holds context[s:-1]; its last committed entry is
the context's second-to-last token, and the feature written there is h_t, the one the target's
lm_head read to predict the root (context[-1], already emitted). Head i on h_t guesses the token
i + 1 steps after position t, which is i steps after the root: head 1 the root's children (draft
depth 1), head 2 depth 2, and so on. That feature was written by the previous round's verify pass
(TargetModel.capture keeps it per entry and ``keep`` gathers it along a tree's accepted path), so
drafting costs H small head passes and **no** target pass. Round 0 prefills the prompt itself, the
prefill the verify pass would do anyway (as layer-skip does); a one-token context has no entry
before its root and drafts nothing, and neither does a round whose window moved (the verify pass
re-prefills the cache then; the heads read it next round).

The candidate tree. Each head's top ``top_k`` tokens, at depth i the tokens of head i; the
cartesian product of these lists, pruned to ``nodes`` nodes by Medusa's sparse-tree rule: keep the
paths with the highest product of head probabilities. Best-first growth (``grow_tree``) does
exactly that, since a child's product never exceeds its parent's. The tree is at most min(K, H)
deep: there is no head for depth H + 1.

With --tree-shape sequoia the shape is fixed instead (the trait ``shaped``): Sequoia's tree for the node
budget and min(K, H) levels (specviz/adaptive/sequoia.py), from the heads' acceptance rates by rank and
depth measured on the training split: a[d][r], the chance that head d's rank-r token is accepted once the
path above it was. Each node's children are still its head's ranked tokens, up to sequoia.MAX_RANKS.

Deterministic: the tree is a function of the context alone (one-hot q at every temperature), so
the lossless verifier walks it token by token and the output is exactly the target's. Medusa's
own paper pairs the heads with *typical acceptance* (``--verification typical``), which accepts
more and is not exact.
"""

from pathlib import Path

import torch

from models.medusa import DEFAULT_PATH, MedusaHeads, cached_heads
from specviz.adaptive import sequoia
from specviz.core.target import TargetModel, window_start
from specviz.drafters.base import Draft, Drafter, chain, grow_tree
from specviz.kernels.cached_model import CachedModel


class MedusaDrafter(Drafter):
    name = "medusa"
    summary = "extra heads on the target's own top-layer feature (read from its cache), a tree of their top tokens"
    paper = "Medusa (Cai et al., 2024, arXiv 2401.10774)"
    glossary = (
        "Medusa gives the target extra heads: small layers on its own top-layer feature, head i trained to "
        "guess the character i + 1 steps ahead while the target itself stays frozen. The feature that predicted "
        "the last character is already in the target's cache, so drafting costs a few small matrix products and no "
        "extra pass of any model. Each head's top few guesses are combined into a tree, pruned to the paths with "
        "the highest product of head probabilities, and the target checks the whole tree in one pass. Verified "
        "token by token the output is exactly the target's. Medusa's paper also offers typical acceptance: keep a "
        "drafted character whenever the target finds it plausible enough, p(x) > min(0.09, 0.3·exp(−H(p))), with no "
        "random draw. More characters are kept per pass, so it is faster, but it is not exact: the heads' favourite "
        "characters come out more often than the target would write them, and the Exactness lab calls it biased "
        "(at temperature 0 both rules are greedy and agree)."
    )
    tree = True
    shaped = True
    needs = frozenset({"target_cache", "heads"})
    panels = ("medusa heads",)
    deterministic = True
    stateful = True  # bound to one generation's target cache
    # In target forward units (adaptive K): a round runs heads 1..K on one feature vector, then walks the
    # tree (a heap) and writes its notes. Measured per draft call in real rounds against the baseline's
    # pass (6 presets, 128 tokens, T = 0, 1 thread, after the second kernel): K = 1 (3 nodes)
    # 0.19, K = 2 (12 nodes) 0.25, K = 3 (16) 0.32, K = 4 (16) 0.45. Priced before as 0.2 a round spread
    # over the 16-node budget (0.0125 a node), a K = 1 round cost 0.04 on paper against 0.19 measured, and
    # adaptive K drafted where it did not pay (0.91x at T = 0 in one bench: docs/notes/adaptive.md).
    # On the EPYC with both kernels a Medusa round costs more than its pass's place on the chain
    # curve plus the heads: fixed K = 1 (a 4-token tree pass) 1.86 baseline rounds, K = 3-4 (16 nodes) 3.17,
    # where the measured curve and the mask say ~1.3 and ~2.5 (11 presets, T = 0.8). Priced at 0.1 a level,
    # adaptive K drafted a tree that did not pay: 0.86x the baseline at T = 0.8 and 0.96x at T = 0 (11
    # presets x 2, paired, 1 thread); at 0.25 a level (and call_cost 0.25) 0.99x and 0.92-0.94x, at 0.4 it
    # all but never drafts: 0.955x at T = 0, what its idle rounds cost (feature capture, shadows).
    level_cost = 0.4
    draft_cost = 0.005
    # A call runs heads 1..K, a one-level shadow draft head 1 alone: in adaptive K's idle rounds its draft
    # call measured a median 203 us (all four heads: 337 us) against a ~1210 us round (11 presets, T = 0.8,
    # 1 thread), 0.17: one level (level_cost) and 0.07 more, whatever K. Later the
    # slowest 1% of idle rounds, the shadows, took ~515 us of ~1400 (0.37). So adaptive K shadows it every
    # ceil((0.03 + 0.25 + 0.4 + 0.005) / 0.01) = 69th idle round.
    call_cost = 0.25

    @classmethod
    def build(cls, src):
        target, s = src.need("target", cls.name), src.settings
        drafter = cls(target, cached_heads(src.checkpoint.path, target.dtype), s.medusa_nodes, s.medusa_top_k)
        if s.tree_shape == "sequoia":
            drafter.rates = drafter.sequoia_rates(src.checkpoint, s.temperature, s.k)
        return drafter

    def __init__(self, target: TargetModel, heads: MedusaHeads, nodes: int = 16, top_k: int = 3):
        if heads.config.n_embd != target.n_embd or heads.config.vocab_size != target.vocab_size:
            raise ValueError("the Medusa heads were made for a model of another width or vocabulary")
        self.target, self.heads, self.nodes, self.top_k = target, heads, nodes, top_k
        self.max_nodes = nodes
        self.rates: sequoia.Rates | None = None  # Sequoia's rates: the tree's shape is fixed (else grown)
        target.capture((heads.config.feature_layer,))  # before the first pass: every entry gets its feature

    def sequoia_rates(self, checkpoint, temperature: float, depth: int) -> sequoia.Rates:
        """The heads' acceptance rates by rank and depth (rounds at most min(``depth``, H) deep) against the
        target at ``temperature``, measured on the training split once and kept on disk."""
        depth = min(depth, self.heads.config.n_heads)
        ranked = self.walk_children(checkpoint.model, depth)
        return sequoia.drafter_rates(checkpoint, self.name, {}, temperature, depth, ranked, (Path(DEFAULT_PATH),))

    def walk_children(self, model, depth: int):
        """sequoia.measure's ``ranked(context, d)`` for these heads: head d's top sequoia.MAX_RANKS tokens,
        read from the feature that predicted the root of the round at whose depth d - 1 ``context`` ends
        (its root: context[-d]), in a cache of the target ``model`` of the walk's own, made when first needed."""
        last: dict[tuple, list[list[int]]] = {}  # the round's context -> each head's ranked tokens
        caches: list[CachedModel] = []

        def ranked(seq: list[int], d: int) -> list[int]:
            round_context = tuple(seq[: len(seq) - d + 1])  # its last token is the round's root
            if round_context not in last:
                if not caches:
                    caches.append(self.feature_cache(model))
                lean = caches[0]
                last.clear()
                lean.sync(list(round_context))  # holds it but the root: the last entry's feature predicted the root
                probs = self.head_probs(lean.length - 1, depth, lean) if lean.length else None  # (depth, V)
                last[round_context] = [] if probs is None else probs.topk(sequoia.MAX_RANKS, dim=-1).indices.tolist()
            rows = last[round_context]
            return rows[d - 1] if d <= len(rows) else []

        return ranked

    def feature_cache(self, model) -> CachedModel:
        """A fresh cache of the target ``model`` that keeps the feature the heads read."""
        lean = CachedModel(model)
        lean.capture((self.heads.config.feature_layer,))
        return lean

    @torch.no_grad()
    def head_probs(self, entry: int, n: int | None = None, cache: TargetModel | None = None) -> torch.Tensor:
        """Heads 1..n's distributions (None: every head's) from the feature of cache entry ``entry`` (of the
        generation's target cache, or ``cache``). -> (n, V)"""
        h = (self.target if cache is None else cache).features(entry, entry + 1)[0, 0]  # (C,)
        return self.heads(h, n).softmax(-1)  # (n, V)

    def draft(self, context, k, temperature, gen):
        t = self.target
        if t.start != window_start(len(context), t.block_size):
            return chain([], notes={"skipped": "the window moved: the verify pass re-prefills the target's cache, "
                                    "and the heads read its features next round"})  # fmt: skip
        t.sync(context)  # round 0: the prompt's prefill (in a run the engine has done it before the draft)
        if t.length == 0 or k == 0:
            return chain([], notes={"skipped": "no cache entry before the root: a one-token context has no feature"
                                    if t.length == 0 else "K = 0"})  # fmt: skip
        entry = t.length - 1  # context[-2]: its feature predicted the root
        probs = self.head_probs(entry, k)  # (depth, V): the heads below depth K are not needed
        shape = None if self.rates is None else sequoia.optimal_tree(self.rates, self.nodes, len(probs))
        draft = self.tree_of(probs, shape)
        draft.notes = {"root": context[-1], "feature_entry": t.start + entry, **draft.notes}
        return draft

    def tree_draft(self, context: list[int], k: int, shape=None, temperature: float = 0.0, gen=None) -> Draft:
        """The tree for ``context`` grown best first (``shape`` None) or of the fixed ``shape`` (rank paths),
        from a scratch cache of the target's (the generation's own is left as it is): the tree page's
        comparison. Deterministic: ``temperature`` and ``gen`` are not used."""
        lean = self.feature_cache(self.target.model)
        lean.sync(context)
        if lean.length == 0 or k == 0:
            return chain([])
        probs = self.head_probs(lean.length - 1, min(k, self.heads.config.n_heads), lean)
        return self.tree_of(probs, shape)

    def tree_of(self, probs: torch.Tensor, shape=None) -> Draft:
        """The candidate tree from the heads' distributions ``probs`` (depth, V): each head's top tokens at
        its depth, grown best first to the node budget (``shape`` None), or of Sequoia's fixed ``shape``."""
        depth = len(probs)
        width = self.top_k if shape is None else sequoia.MAX_RANKS
        top_p, top_t = probs.topk(min(width, probs.size(1)), dim=-1)  # (depth, width)
        ranked = [list(zip(ts, ps, strict=True)) for ts, ps in zip(top_t.tolist(), top_p.tolist(), strict=True)]

        def children(state):  # state: (the node's depth, its path's product of head probabilities)
            d, score = state
            return [(tok, score * p, (d + 1, score * p)) for tok, p in ranked[d]] if d < depth else []

        if shape is None:
            tokens, parents, nodes = grow_tree(children, (0, 1.0), depth, self.nodes)
        else:
            tokens, parents, nodes = sequoia.grow_shape(children, (0, 1.0), shape)
        tree = [{"token": tok, "parent": par, "depth": d, "score": s}
                for tok, par, (d, s, _) in zip(tokens, parents, nodes, strict=True)]  # fmt: skip
        heads = [[{"token": tok, "p": p} for tok, p in row] for row in ranked]
        notes = {"heads": heads, "tree": tree, "nodes": self.nodes, "top_k": width,
                 "shape": "dynamic" if shape is None else "sequoia"}  # fmt: skip
        return Draft(tokens, parents, None, notes)
