"""Neural draft tree (EAGLE-2 style dynamic trees, from the tiny model's own confidence): grow a
token tree one depth per tiny forward pass, spending a node budget where the draft is sure.

    depth d    the nodes of depth d - 1 whose cumulative draft probability (the product of q
               along the path) is highest were run through the tiny model in ONE pass, with tree
               attention (each sees the context, its ancestors and itself); their children's
               slots are ranked by cumulative probability times the j-th largest q of the parent,
               and the best ceil(budget left / depths left) slots get a child. So the budget is
               spread over the depths to come, and within a depth goes to the likeliest branches.
    T = 0      a node's children are its top tokens, deterministic (one-hot q); greedy
               verification walks the tree.
    T > 0      a node's children are drawn from q, its temperature-scaled distribution, either
               with replacement (SpecInfer: i.i.d., repeats stay separate nodes) or without
               (Sequoia: each sibling from q with the earlier siblings' tokens removed,
               renormalised; no siblings once no mass is left). Draft.q holds exactly the
               distribution each node was drawn from (specviz/verifiers/multidraft.py).

Sequoia's shape (--tree-shape sequoia, the trait ``shaped``): the tree is Sequoia's fixed tree for the
node budget and K (specviz/adaptive/sequoia.py) instead of the grown one, from the tiny model's acceptance
rates by sibling rank and depth, measured on the training split with the same children (top tokens at
T = 0, draws as the tree_sampling knob says at T > 0). Each node gets as many children as the shape gives
its rank path, drawn as above (fewer once no mass is left; what the shape hangs below a missing child is
left out), and the nodes the shape extends are run in one pass per depth.

Why this stays lossless at T > 0: every drawn child is kept. How many children a node gets is
decided before any of them is drawn (from the draft's q and the tokens above it, or from the fixed
shape and the node's rank path; never from the target), so a node's children are the first n draws
of the scheme, and the token-wise induction (verifiers/tokenwise.py) holds at every node. Dropping drawn children by their own tokens (a
final re-rank, as EAGLE-2 does) would tilt them towards the draft's likely tokens: not done here.

The tiny model's cache: the context's missing tokens and every expanded node's keys and values
are scratch (CachedModel.extend appends each depth after the last); at the end the context is
kept and the tree dropped, and the next round trims to what the target accepted, as neural.py.
K tiny forward passes per round at most (one for the context, one per depth but the last).
"""

from collections import Counter

import torch

from models.gpt import GPT
from specviz.adaptive import sequoia
from specviz.core.sampling import draw, probs_from_logits, scale_probs, without
from specviz.drafters.base import Draft, Drafter, chain, depth_first, model_cache, tree_mask
from specviz.kernels.cached_model import CachedModel

# Default children per node, as the distilled tree: at T = 0.8, 16 nodes at K = 4 lift the chance that a
# depth-1 draft is accepted from the chain's 0.67 to 0.88 (measured on the app's four presets).
CHILDREN = 3


class NeuralTreeDrafter(Drafter):
    name = "neural-tree"
    summary = "the tiny GPT, a tree grown from its confidence"
    paper = "EAGLE-2 dynamic trees (Li et al., 2024); SpecInfer / Sequoia sampling"
    preset = "Free verse"
    tree = True
    sampled_tree = True
    shaped = True
    needs = frozenset({"draft_model"})
    bpe = True  # any draft model that shares the target's tokenizer (checked before loading)
    stateful = True
    # Per drafted node, in target forwards. A tiny pass costs ~0.45 (the chain drafter's figure: per-op
    # overhead, barely more for a few rows), and a round of N nodes over K depths takes K passes of ~N/K
    # rows: 0.45 K / N per node, 0.11 for the default 16 nodes at K = 4. Per node there is Python on top
    # (draws, top-k, the mask): bench --quick measured draft c 0.22 at K = 4, T = 0.8, in a run where the
    # chain measured 0.52 against its 0.45, so ~0.2.
    draft_cost = 0.2

    @classmethod
    def build(cls, src):
        s = src.settings
        drafter = cls(src.need("draft_model", cls.name), s.neural_tree_nodes, s.neural_tree_children, s.tree_sampling)
        if s.tree_shape == "sequoia":
            drafter.rates = drafter.sequoia_rates(src.checkpoint, s.temperature, s.k)
        return drafter

    def __init__(self, model: GPT, nodes: int = 16, children: int = CHILDREN, sampling: str = "without-replacement"):
        self.lm = model_cache(model)
        self.nodes, self.children, self.sampling = nodes, children, sampling
        self.max_nodes = nodes
        self.rates: sequoia.Rates | None = None  # Sequoia's rates: the tree's shape is fixed (else grown)

    def sequoia_rates(self, checkpoint, temperature: float, depth: int) -> sequoia.Rates:
        """The tiny model's acceptance rates by sibling rank and depth (rounds at most ``depth`` deep)
        against the target at ``temperature``, its children drawn as this drafter draws them: measured
        on the training split once and kept on disk, keyed by the tiny model's weights."""
        if getattr(checkpoint, "bpe", False):
            raise ValueError("Sequoia's tree shape measures its rates on the character model only")
        model, caches = self.lm.model, []  # the walk's own cache of the tiny model, made when first needed

        def ranked(seq: list[int], d: int):
            if not caches:
                caches.append(CachedModel(model))
            probs = probs_from_logits(caches[0].next_logits(seq), 1.0)  # (V,) untempered, as in a draft
            return (
                probs.topk(sequoia.MAX_RANKS).indices.tolist() if temperature == 0 else scale_probs(probs, temperature)
            )

        knobs = {"draft_weights": sequoia.weights_digest(model)}
        return sequoia.drafter_rates(checkpoint, self.name, knobs, temperature, depth, ranked,
                                     sampling=None if temperature == 0 else self.sampling)  # fmt: skip

    def tree_draft(self, context: list[int], k: int, shape=None, temperature: float = 0.0, gen=None) -> Draft:
        """The tree for ``context`` grown (``shape`` None) or of the fixed ``shape`` (rank paths), from a
        scratch copy of this drafter (the generation's cache and stream are left as they are): the tree
        page's comparison. At T > 0 its children are drawn with ``gen`` (a seed of 0 if None)."""
        scratch = NeuralTreeDrafter(self.lm.model, self.nodes, self.children, self.sampling)
        return scratch.draft(context, k, temperature, gen or torch.Generator().manual_seed(0), shape)

    def _draw_children(self, probs: torch.Tensor, n: int, temperature: float, gen: torch.Generator):
        """Up to n children of a node with untempered distribution ``probs`` (V,), in draw order:
        [(token, q the token was drawn from or None, q(token) for the score)]."""
        if temperature == 0:
            top = probs.topk(n)
            return [(int(t), None, float(v)) for v, t in zip(top.values, top.indices, strict=True)]
        q = scale_probs(probs, temperature)  # (V,) what the children are drawn from
        out, rest = [], q
        for _ in range(n):
            x = draw(rest, gen)
            out.append((x, rest, float(q[x])))
            if self.sampling == "without-replacement":
                rest = without(rest, x)
                if float(rest.sum()) == 0:  # every token already drawn
                    break
        return out

    @staticmethod
    def _width(budget: int, depths: int) -> int:
        """Children to draw at the next depth: the budget left spread evenly over the depths to come, so
        a tree of at least K nodes can reach depth K. (Shares falling with depth, 2 / (depths + 1) of what
        is left, measured no better: +0.1 tokens per target pass at T = 0.8, -0.24 at T = 0 and K = 4,
        and they spend the budget before depth 8 at K = 8.)"""
        return -(-budget // depths)  # ceil

    def _slots(self, probs: torch.Tensor, scores: list[float], width: int, temperature: float) -> list[int]:
        """Children per expanded node: the best ``width`` slots, slot j of node i valued at its
        cumulative probability times its j-th largest q. A node's slots are a prefix. (F,) ints"""
        q = probs if temperature == 0 else scale_probs(probs, temperature)  # (F, V)
        c = min(self.children, q.size(-1))
        values = q.topk(c, dim=-1).values * torch.tensor(scores, dtype=q.dtype)[:, None]  # (F, c)
        best = values.flatten().topk(min(width, values.numel())).indices  # (width,)
        return torch.bincount(best // c, minlength=len(scores)).tolist()

    def draft(self, context, k, temperature, gen, shape=None):
        """The tree for ``context``: grown from the tiny model's confidence, or of Sequoia's shape (with
        rates: the shape for the budget and K; ``shape``: these rank paths)."""
        if shape is None and self.rates is not None:
            shape = sequoia.optimal_tree(self.rates, self.nodes, k)
        before = self.lm.length
        self.lm.trim_to(context)  # drops last round's tree and the context the target rejected
        synced = self.lm.length
        if k <= 0:
            return chain([], notes={"draft_cache": {"before": before, "after_trim": synced, "after_draft": synced}})
        missing = context[self.lm.start + synced :]  # ends with the root, the last context token
        m = len(missing)
        root_pos = synced + m - 1
        logits = self.lm.forward(missing, list(range(synced, root_pos + 1)))[-1:]  # (1, V) after the root

        def expand(nodes, depth, ran_parents):
            # Rows of the expanded nodes over the scratch: the context (all of it; tree_mask's column 0
            # is the root, its last token), then their ancestors among the nodes run before, and themselves.
            F = len(nodes)
            mask = torch.cat([torch.ones(F, m - 1, dtype=torch.bool), tree_mask(ran_parents)[-F:]], dim=1)
            return self.lm.extend(nodes, [root_pos + depth] * F, mask)  # (F, V)

        draft = self.grow(logits, k, temperature, gen, expand, shape)
        self.lm.keep(list(range(m)), missing)  # the context stays cached; the tree is dropped
        draft.notes["draft_cache"] = {"before": before, "after_trim": synced, "after_draft": self.lm.length}
        return draft

    def grow(self, logits: torch.Tensor, k: int, temperature: float, gen: torch.Generator, expand, shape=None) -> Draft:
        """The tree from the root's logits (1, V): per depth, draw the children of the expanded nodes, then
        expand the likeliest new ones with ``expand(tokens, depth, ran_parents) -> (F, V)`` logits, one
        pass: ``tokens`` the F nodes' tokens, ``ran_parents`` every node run so far (these F last) as the
        index of its parent among them, -1 the root (a tree_mask's parents). ``shape`` (rank paths, as
        sequoia.optimal_tree gives them): each node gets the children the shape gives its rank path and
        the nodes with children in it are expanded; None: the dynamic tree. Shared by the EAGLE tree
        (specviz/drafters/eagle_tree.py), whose head is run instead of the tiny model."""
        kids = None if shape is None else Counter(path[:-1] for path in shape)  # rank path -> children
        tokens, paths, qs, scores, parents = [], [], [], [], []  # per node, in creation (level) order
        expanded, scores_of = [-1], [1.0]  # the nodes `logits` belongs to (-1 the root), their scores
        ran, ran_parents = {}, []  # node -> its place among the nodes run; for tree_mask
        budget, passes = self.nodes, 1
        for depth in range(1, k + 1):
            probs = probs_from_logits(logits, 1.0)  # (F, V) untempered: temperature is applied once, in draws
            width = self._width(budget, k - depth + 1)
            new = []
            if kids is None:
                slots = self._slots(probs, scores_of, width, temperature)
            else:
                slots = [kids[paths[node] if node >= 0 else ()] for node in expanded]
            for row, (node, n) in enumerate(zip(expanded, slots, strict=True)):
                for rank, (tok, q, qx) in enumerate(self._draw_children(probs[row], n, temperature, gen) if n else []):
                    new.append(len(tokens))
                    tokens.append(tok)
                    parents.append(node)
                    paths.append((paths[node] if node >= 0 else ()) + (rank,))
                    qs.append(q)
                    scores.append((scores[node] if node >= 0 else 1.0) * qx)
            budget -= len(new)
            if depth == k or budget <= 0 or not new:
                break
            if kids is None:  # expand next the likeliest new nodes, as many as the next depth has slots at most
                expanded = sorted(new, key=lambda i: -scores[i])[: self._width(budget, k - depth)]
            else:  # the new nodes the shape extends
                expanded = [i for i in new if kids[paths[i]]]
                if not expanded:
                    break
            scores_of = [scores[i] for i in expanded]
            for i in expanded:
                ran_parents.append(ran[parents[i]] if parents[i] >= 0 else -1)  # an expanded node's parent ran
                ran[i] = len(ran)
            logits = expand([tokens[i] for i in expanded], depth, ran_parents)  # (F, V)
            passes += 1
        order, flat_parents = depth_first(paths)
        sampled = temperature > 0 and bool(tokens)  # a shape may give the root no child: an empty draft
        draft = Draft([tokens[i] for i in order], flat_parents, torch.stack([qs[i] for i in order]) if sampled else None,
                      sampling=self.sampling if sampled else None)  # fmt: skip
        tree = [{"token": tokens[i], "parent": p, "depth": len(paths[i]), "score": scores[i]}
                for i, p in zip(order, flat_parents, strict=True)]  # fmt: skip
        draft.notes = {"tree": tree, "nodes": self.nodes, "children": self.children, "passes": passes,
                       "shape": "dynamic" if shape is None else "sequoia"}  # fmt: skip
        return draft
