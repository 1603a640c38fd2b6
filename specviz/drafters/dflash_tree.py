"""DDTree (Ringel and Romano, 2026, "Accelerating Speculative Decoding with Block Diffusion Draft Trees"): a draft
tree built best first from the parallel drafter's per-slot distributions (specviz/drafters/dflash.py), one head
pass per round as the chain's.

Slot d's distribution q_d does not depend on the tokens above it, so every node at depth d - 1 has the same
ranked children: slot d's likeliest tokens. A node's score is the product of its path's slot probabilities
(DDTree's surrogate for the chance that the target walks that far); it never exceeds its parent's, so
``grow_tree``'s heap keeps the ``nodes`` highest-scoring nodes (the node budget) and always a parent before its
child, at most min(K, block) deep. At T > 0 the scores use the temperature-scaled q (what the target's
sampling favours); at T = 0 the untempered one (a one-hot q would rank only one child per slot).

Exact at every temperature: the tree is deterministic, a function of the context through the draft head
alone, never of the target. Its proposals are one-hot (Draft.q is None), so token-wise verification walks it
as the target samples: at each node the target draws its token from p; if a child holds it, the walk goes
down, else that token is the correction and the round ends (the traversal verifier finds the same path with
its own trie walk). Each emitted token is a draw from the target's p given the tokens before it, whatever the
tree held (tests/statistical/test_exactness_real_target.py, both verifiers, at T = 0.5 and 1).

Dynamic by design: DDTree's point is a tree grown best first from this context's slot distributions, so
it does not take Sequoia's fixed shape (--tree-shape; the trait ``shaped`` stays off).
"""

from specviz.core.sampling import scale_probs
from specviz.drafters.base import Draft, chain, grow_tree
from specviz.drafters.dflash import SKIPPED, TOP, DFlashDrafter, shared_dflash, slot_notes

CHILDREN = 8  # the most children a node is offered (slot d's top tokens); the budget decides how many stay


class DFlashTreeDrafter(DFlashDrafter):
    name = "dflash-tree"
    summary = "DDTree: a tree grown best first from the parallel head's per-slot distributions, one head pass"
    paper = "DDTree (Ringel and Romano, 2026) on DFlash (Chen et al., 2026)"
    glossary = (
        "DDTree turns the parallel drafter's one pass into a tree instead of a single line. Each slot of the block "
        "has its own distribution over the next characters, so a path through the slots' likeliest characters has a "
        "score, the product of their probabilities. A heap keeps the best-scoring paths until the node budget is "
        "spent, and the target checks the whole tree in one pass, walking down as long as the character it picks "
        "is one of the children. The tree never depends on the target, so the output is exactly the target's. More "
        "paths mean more characters accepted per pass, but on a CPU a wide tree makes the verify pass longer."
    )
    tree = True
    deterministic = True
    # One head pass per round whatever K (the chain's call_cost); per node a heap push and pop and a note.
    call_cost = 0.7
    draft_cost = 0.02

    @classmethod
    def build(cls, src):
        return cls(shared_dflash(src.checkpoint), src.need("target", cls.name), src.settings.dflash_tree_nodes)

    def __init__(self, head, target, nodes: int = 16):
        super().__init__(head, target)
        self.nodes = self.max_nodes = nodes

    def draft(self, context, k, temperature, gen):
        ready = self.slots(context, k)
        if ready is None:
            return chain([], notes={"head": self.name, "skipped": SKIPPED})
        probs, notes = ready  # (S, V) untempered
        scored = probs if temperature == 0 else scale_probs(probs, temperature)  # row by row, in one call
        top = scored.topk(min(CHILDREN, scored.size(-1)), dim=-1)
        ranked = [list(zip(ti, tv, strict=True)) for ti, tv in zip(top.indices.tolist(), top.values.tolist(),
                                                                   strict=True)]  # fmt: skip

        def children(state):  # state: (depth, the path's product of slot probabilities)
            d, score = state
            return [(tok, score * p, (d + 1, score * p)) for tok, p in ranked[d]] if d < len(ranked) else []

        tokens, parents, kept = grow_tree(children, (0, 1.0), len(ranked), self.nodes)
        # the notes' top TOP of each slot: at T = 0 the first of ``top`` (topk sorts), else another topk
        shown = top if temperature == 0 else probs.topk(min(TOP, probs.size(-1)), dim=-1)
        notes["slots"] = slot_notes([r[:TOP] for r in shown.indices.tolist()], shown.values)
        notes["tree"] = [{"token": tok, "parent": par, "depth": d, "score": s}
                         for tok, par, (d, s, _) in zip(tokens, parents, kept, strict=True)]  # fmt: skip
        notes["nodes"] = self.nodes
        return Draft(tokens, parents, None, {"head": self.name, "root": context[-1], **notes})
