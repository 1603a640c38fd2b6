"""EAGLE-2's dynamic draft tree (Li et al. 2024, arXiv 2406.16858) grown by the EAGLE-3 head.

The tree is the neural tree's (specviz/drafters/neural_tree.py, NeuralTreeDrafter.grow): per depth,
the node budget goes to the children slots of highest cumulative draft probability, the likeliest
new nodes are expanded in one pass, and at T > 0 every drawn child is kept, so its lossless
argument holds unchanged. Only the pass differs: the EAGLE head (specviz/drafters/eagle.py) runs
instead of the tiny model. Expanding a node feeds the head (its parent's output state, the node's
token), as a chain's step j >= 1 does; the node attends to the head's cached context entries, the
nodes on its path (its ancestors run before) and itself: tree attention over the head's scratch,
the root's column being the head's last context entry. One head pass per depth.

Dynamic by design, as EAGLE-2's trees are: the tree follows the head's confidence in each context, so it
does not take Sequoia's fixed shape (the trait ``shaped`` is off; its rates would need a walk of the head
along the target's generations, which the neural tree's tiny-model walk does not give).
"""

import torch

from models.eagle import EagleHead
from specviz.core.target import TargetModel
from specviz.drafters.base import chain, tree_mask
from specviz.drafters.eagle import DRAFT_COST, SKIPPED, HeadCache, head_name, shared_head
from specviz.drafters.neural_tree import CHILDREN, NeuralTreeDrafter
from specviz.kernels.attention import attn_bias


class EagleTreeDrafter(NeuralTreeDrafter):
    name = "eagle3-tree"
    summary = "the EAGLE-3 head, a dynamic tree grown from its confidence"
    paper = "EAGLE-2 trees (Li et al., 2024) on EAGLE-3 (Li et al., 2025)"
    preset = "Dialogue"
    needs = frozenset({"target_cache", "heads"})
    bpe = False  # its head reads the character model's features
    shaped = False  # EAGLE-2's tree grows from the head's confidence (see above)
    panels = ("eagle features",)
    # Per node: K head passes over ~N/K rows each, so ~DRAFT_COST K / N, plus the tree's per-node Python
    # (~0.1, the neural tree's estimate): 0.225 at 16 nodes, K = 4. bench-style runs measured draft c 0.32
    # (T = 0) and 0.23 (T = 0.8) on a loaded machine (see specviz/drafters/eagle.py).
    draft_cost = DRAFT_COST * 4 / 16 + 0.1

    @classmethod
    def load(cls, settings, checkpoint):
        shared_head(head_name(settings), checkpoint)  # a head paired with this target

    @classmethod
    def build(cls, src):
        s = src.settings
        head = shared_head(head_name(s), src.checkpoint)
        return cls(head, src.need("target", cls.name), s.eagle_tree_nodes, s.eagle_tree_children, s.tree_sampling)

    def __init__(self, head: EagleHead, target: TargetModel, nodes: int = 16, children: int = CHILDREN,
                 sampling: str = "without-replacement"):  # fmt: skip
        self.head, self.cache = head, HeadCache(head, target)
        self.nodes, self.children, self.sampling = nodes, children, sampling
        self.max_nodes = nodes

    @torch.no_grad()
    def draft(self, context, k, temperature, gen):
        ready = self.cache.prepare(context) if k > 0 else None
        if ready is None:
            return chain([], notes={"head": "eagle3", "skipped": SKIPPED})
        root_h, notes = ready
        P = self.cache.n  # the head's context entries; entry P-1 is the root's column
        states = []  # output state (1, C) per node run, in run order

        def expand(tokens, depth, ran_parents):
            F, R = len(tokens), len(ran_parents)  # new nodes; nodes run, these included
            g = torch.cat([root_h if p < 0 else states[p] for p in ran_parents[-F:]])  # (F, C)
            # The context entries (the root's is tree_mask's column 0), the nodes run before, the new ones.
            bias = attn_bias(P - 1, tree_mask(ran_parents)[-F:], g.dtype)  # (F, P + R)
            h = self.cache.step(g, tokens, P + R - F, bias)  # (F, C)
            states.extend(h[i : i + 1] for i in range(F))
            return self.cache.lean.logits(h)  # (F, V)

        draft = self.grow(self.cache.lean.logits(root_h), k, temperature, gen, expand)
        draft.notes |= {"head": "eagle3", **notes}
        return draft
