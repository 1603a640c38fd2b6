"""Traversal verification (Weng, Hu, Chen, Liu, Mei, Qiu, Tian and Shi, NeurIPS 2025, "Traversal
Verification for Speculative Tree Decoding", arXiv 2505.12398): verify a draft tree from the leaves
up, deciding whole root-to-node sequences by their sequence-level probability ratio instead of
token by token from the root.

The rule. Every node Y carries a weight alpha(Y) in [0, 1] and a target row p_Y; the root has
alpha = 1 and the target's row. A child c of Y (token x, drawn from q_c) enters with

    alpha(c) = min(1, alpha(Y) p_Y(x) / q_c(x))        (the capped sequence ratio p(path)/q(path))
    p_c      = the target's row after c

Nodes are tried in post-order (depth first, children in draft order, a node after its subtree):
the first node tried is the deepest leftmost leaf. Trying node Z means drawing u ~ U(0, 1) and

- accepting if u < alpha(Z): the round keeps the path root .. Z and draws its last token from
  p_Z (the target's row if Z had no children: the bonus; else the residual its rejected
  children left: the correction);
- rejecting Z otherwise: Z's parent Y takes the rejection into its own weight and row,

      r = max(alpha(Y) p_Y - q_Z, 0),  m = sum(r),
      p_Y <- r / m,  alpha(Y) <- m / (m + 1 - alpha(Y)),

  and the traversal moves on to Y's next child (entered with the updated alpha(Y), p_Y), or,
  when none is left, tries Y itself. The root always ends with alpha = 1 (m / (m + 0)), so the
  round always emits something.

Nothing but the uniform draws is random: the order of the tries and every alpha are fixed by the
draft and the target's rows before the first draw, so the exact outcome distribution is a list,
P(Z is accepted) = alpha(Z) prod over the earlier tries (1 - alpha) (``traversal_plan``).

Why it is lossless. Write P_p(s) for the probability of a continuation s (its first token from p,
the rest from the target). Claim, for every node Y in state (alpha, p) with its remaining children
still to come (each drawn, given everything before it, from the q it is verified against): over
the draft below Y and the draws, the procedure "try Y's remaining children, then Y" emits s with
probability alpha P_p(s), and rejects Y with probability 1 - alpha.

By induction on the subtree. No children left: Y is tried, accepted with alpha, then emits from
p. A next child c, token x ~ q: by induction c's subtree emits s = (x, t..) with probability
q(x) min(1, alpha p(x)/q(x)) P_target(t.. | Y x) = min(q, alpha p)(x) P_target(t..), and rejects c
with probability sum_x [q - alpha p]_+(x) = 1 - alpha + m in all. After a rejection, whatever x
was, the procedure goes on from (alpha', p') = (m / (m + 1 - alpha), r / m), which by induction emits s
with probability (1 - alpha + m) alpha' p'(s_1) P_target(..) = r(s_1) P_target(..). In total
min(q, alpha p) + max(alpha p - q, 0) = alpha p: the claim's first half; and Y is rejected with
probability (1 - alpha + m)(1 - alpha') = 1 - alpha. At the root alpha = 1: every continuation
comes out with the target's probability. [Traversal's acceptance of c is not min(1, p/q) at c
alone: c's whole subtree gets its chance first, so a deep path whose ratio recovers (a later
token with p > q) is kept even where the token-wise rule would stop at c.]

Which trees. The induction asks only that each child be drawn from the q it is verified against
given everything drawn before it (the same condition as token-wise verification): q_c is the
node's q for siblings drawn with replacement, q with the earlier siblings removed for siblings
drawn without replacement (``multidraft.sibling_rows``), and one-hot for a deterministic tree
(trie, distilled-tree, suffix). So every tree drafter and every chain is supported; nothing is
refused. (Only the paper's abstract could be read while writing this: the rule and its proof
above were derived here, and tests/unit/test_traversal.py checks them by exact enumeration for chains,
one-hot trees and trees sampled with and without replacement.)

On a chain traversal is block verification (Sun et al., ICLR 2025, block.py): alpha(X_i) on entry
is block's weight w_i, and alpha after the child's rejection is its stop h_i, so it has the
largest expected accepted length of any valid rule on the same draft distribution (for one draft
it can be lower than token-wise; tests/unit/test_traversal.py enumerates both).

On a deterministic tree (one-hot q) traversal keeps exactly as much as token-wise, in expectation,
on every draft: token-wise already keeps the longest drafted prefix of a target sample, the most
any lossless rule can keep with one-hot drafts. The gain is on sampled chains and trees.

At temperature 0 every alpha is 0 or 1 and the accepted path is the longest greedy match, with no
draws: the same tokens as token-wise.
"""

from dataclasses import dataclass

import torch

from specviz.core.record import PositionRecord
from specviz.core.sampling import draw, uniform
from specviz.drafters.base import Draft
from specviz.verifiers.base import Verdict, Verifier, children_of
from specviz.verifiers.multidraft import sibling_rows
from specviz.verifiers.tokenwise import residual


@dataclass
class Try:
    """One node tried, in traversal order (the root is node -1, always last)."""

    node: int
    ratio: float  # alpha(parent) p_parent(x) / q(x) when the node was entered (uncapped); 1 for the root
    alpha: float  # the acceptance probability when tried (after its children's rejections)
    p: torch.Tensor  # (V,) what the last token is drawn from if the node is accepted
    parent_p: torch.Tensor | None  # (V,) the parent's row the node was entered against


def traversal_plan(draft: Draft, p_rows: torch.Tensor, token_residual: bool = False) -> list[Try]:
    """Every try of the traversal, in order, with its acceptance probability given that all
    earlier tries were rejected: no draws, so the outcome distribution is exact.
    ``token_residual``: the wrong variant's update (norm(max(p - q, 0)), alpha left as it was)."""
    kids = children_of(draft.parents)
    q_rows = sibling_rows(draft, p_rows.size(-1), draft.sampling)  # (N, V) as each child was drawn
    tries: list[Try] = []

    def visit(node: int, ratio: float, alpha: float, p: torch.Tensor, parent_p: torch.Tensor | None) -> None:
        for c in kids[node]:
            x, q = draft.tokens[c], q_rows[c]
            child_ratio = alpha * float(p[x]) / float(q[x])  # q(x) > 0: x was drawn from q
            visit(c, child_ratio, min(1.0, child_ratio), p_rows[c + 1], p)
            # c's whole subtree was rejected: Y absorbs it (see the module docstring)
            if token_residual:  # the wrong variant: token-wise's update, the parent's weight as it was
                p = residual(p, q)
                continue
            r = (alpha * p - q).clamp_min(0)  # (V,)
            m = float(r.sum())
            # m + 1 - alpha = 0 only when alpha = 1 and p = q: the rejection had probability 0
            alpha = m / (m + 1 - alpha) if m + 1 - alpha > 0 else 1.0
            p = r / m if m > 0 else p
        tries.append(Try(node, ratio, alpha, p, parent_p))

    visit(-1, 1.0, 1.0, p_rows[0], None)
    return tries


def accepted_depths(draft: Draft, tries: list[Try]) -> list[tuple[float, int]]:
    """(probability, accepted depth) of every outcome of the plan; they sum to 1."""
    depths, out, reach = draft.depths, [], 1.0
    for t in tries:
        out.append((reach * t.alpha, 0 if t.node < 0 else depths[t.node]))
        reach *= 1 - t.alpha
    return out


def tokenwise_expected(draft: Draft, p_rows: torch.Tensor) -> float:
    """Expected accepted tokens of token-wise verification on this draft (a tree too), no draws:
    child i of a node is reached when its earlier siblings were rejected, accepted with
    min(1, p_i(x)/q_i(x)) against the residual p_i, and then its own subtree counts."""
    kids = children_of(draft.parents)
    q_rows = sibling_rows(draft, p_rows.size(-1), draft.sampling)

    def below(node: int) -> float:
        p, reach, total = p_rows[node + 1], 1.0, 0.0
        for c in kids[node]:
            x, q = draft.tokens[c], q_rows[c]
            a = min(1.0, float(p[x]) / float(q[x]))
            total += reach * a * (1 + below(c))
            reach *= 1 - a
            p = residual(p, q)
        return total

    return below(-1)


def expected_both(draft: Draft, p_rows: torch.Tensor) -> dict[str, float]:
    """Expected accepted tokens for this draft under token-wise and traversal verification."""
    outcomes = accepted_depths(draft, traversal_plan(draft, p_rows))
    return {"lossless": tokenwise_expected(draft, p_rows), "traversal": sum(w * d for w, d in outcomes)}


class Traversal(Verifier):
    name = "traversal"
    panels = ("traversal tries",)
    summary = "traversal verification: leaves first, whole paths by their sequence ratio (lossless, any tree)"
    paper = "Traversal verification (Weng et al., 2025)"
    showcase = ("eagle3-tree", "neural-tree")
    how = "verified leaves first, whole paths at a time"
    bench_on = "trees"
    token_residual = False  # the wrong variant's switch

    def verify(self, draft: Draft, p_rows: torch.Tensor, temperature: float, gen: torch.Generator) -> Verdict:
        tries = traversal_plan(draft, p_rows, self.token_residual)
        kids = children_of(draft.parents)
        q_rows = sibling_rows(draft, p_rows.size(-1), draft.sampling)
        depths = draft.depths
        out, steps = Verdict(), []
        for i, t in enumerate(tries):
            # alpha is 0 or 1 at temperature 0 (and wherever the ratio leaves no doubt): no draw
            u = uniform(gen) if 0.0 < t.alpha < 1.0 else None
            accepted = t.alpha >= 1.0 if u is None else u < t.alpha
            step = {"node": t.node, "depth": 0 if t.node < 0 else depths[t.node],
                    "token": None if t.node < 0 else draft.tokens[t.node], "ratio": t.ratio, "alpha": t.alpha,
                    "u": u, "accepted": accepted}  # fmt: skip
            steps.append(step)
            if t.node >= 0:
                out.checks.append(self.record(draft, q_rows[t.node], t, t.alpha, u, accepted))
            if not accepted:
                step["next"] = tries[i + 1].node  # the next try: a sibling's deepest leaf, or the parent
                continue
            step["next"] = "emit"
            node, path = t.node, []
            while node >= 0:
                path.append(node)
                node = draft.parents[node]
            out.path = path[::-1]
            # The accepted node's ancestors are kept with it, with no draw of their own: recorded
            # last, each with its capped sequence ratio, so every kept node has its record.
            by_node = {s.node: s for s in tries}
            for a in out.path[:-1]:
                out.checks.append(self.record(draft, q_rows[a], by_node[a], min(1.0, by_node[a].ratio), None, True))
            if kids[t.node]:  # its children were all rejected: the correction, from what they left
                out.residual, out.correction = t.p, draw(t.p, gen)
            else:  # a leaf (or an empty draft): the bonus from the target's row
                out.bonus_p, out.bonus = t.p, draw(t.p, gen)
            break
        # the same draft under both rules, no draws (this rule's own plan: the wrong variant's is its own)
        expected = {"lossless": tokenwise_expected(draft, p_rows),
                    self.name: sum(w * d for w, d in accepted_depths(draft, tries))}  # fmt: skip
        out.notes = {"rule": self.name, "tries": steps, "expected_accepted": expected}
        return out

    @staticmethod
    def record(draft: Draft, q: torch.Tensor, t: Try, alpha: float, u: float | None, accepted: bool) -> PositionRecord:
        x = draft.tokens[t.node]
        px, qx = float(t.parent_p[x]), float(q[x])
        return PositionRecord(t.node, draft.depths[t.node], x, qx, px, px / qx, alpha, u, accepted, None, q, t.parent_p)


class TraversalTokenResidual(Traversal):
    """WRONG on purpose: after a sequence-level rejection the parent falls back to token-wise
    verification's update: its row becomes the token-level residual norm(max(p - q, 0)) and its
    weight stays alpha, instead of norm(max(alpha p - q, 0)) and m / (m + 1 - alpha) <= alpha. The
    rejected subtree's share of the parent's mass is spent twice: a drafted prefix whose ratio
    fell below 1 comes out too often (and its correction from the wrong row)."""

    name = "traversal-token-residual"
    lossless = False
    token_residual = True
    bench_on = ""  # biased: the bench runs it only where the atlas shows it (nowhere)
    summary = "WRONG on purpose: traversal with the token-level residual after a sequence rejection (lossy, biased)"
    showcase = ()
