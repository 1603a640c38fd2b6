"""Verification: accept or reject each drafted token against the target, losslessly.

One rule covers every drafter. At a node of the draft (the root is the last generated token)
with target distribution p, try its children one after another; child x, proposed from q, is
accepted with probability min(1, p(x)/q(x)). On rejection p becomes the residual
norm(max(0, p - q)) and the next child is tried. If every child is rejected, the correction is
drawn from what is left; if the node has no children (the whole path was accepted), the bonus
token is drawn from p. For a one-hot q this is "accept with p(x), else zero p(x) and
renormalise", lossless at every temperature. At temperature 0 p is one-hot: a child is
accepted exactly when it is the target's argmax, and no randomness is used.

``verify_nasd_seed`` is seed 004's NASD rule, kept as a labelled variant because it is NOT
lossless: it samples s ~ p, accepts while s equals the draft, and then draws the correction
afresh from p, so a drafted token is emitted with probability p(x)(2 - p(x)) instead of p(x).
"""

from dataclasses import dataclass, field
from functools import cache

import torch

from specviz.drafters.base import Draft
from specviz.record import PositionRecord
from specviz.sampling import draw, uniform

VARIANTS = ("lossless", "nasd-seed")


@cache
def one_hot_rows(V: int) -> torch.Tensor:
    """Row x is the one-hot q of a deterministic proposal x; rows are shared views, never written. (V, V)"""
    return torch.eye(V, dtype=torch.float64)


@dataclass
class Verdict:
    checks: list[PositionRecord] = field(default_factory=list)  # every drafted token tried, in order
    path: list[int] = field(default_factory=list)  # accepted draft nodes, root to leaf
    residual: torch.Tensor | None = None  # (V,) what the correction was drawn from
    correction: int | None = None
    bonus_p: torch.Tensor | None = None  # (V,) what the bonus token was drawn from
    bonus: int | None = None

    def emitted(self, draft: Draft) -> list[int]:
        last = self.correction if self.correction is not None else self.bonus
        return [draft.tokens[i] for i in self.path] + [last]


def children_of(parents: list[int]) -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {-1: []}
    for i, parent in enumerate(parents):
        kids.setdefault(parent, []).append(i)
        kids.setdefault(i, [])
    return kids


def expected_acceptance(draft: Draft, p: torch.Tensor) -> float:
    """The probability that verify accepts one of the root's children, given the root's target
    distribution p (V,): sum of p(x) over distinct deterministic children (each rejection zeroes
    p(x) and renormalises), or sum of min(p, q) for a single child drawn from q. No randomness."""
    roots = [i for i, parent in enumerate(draft.parents) if parent == -1]
    if draft.q is None:
        return float(p[[draft.tokens[i] for i in roots]].sum()) if roots else 0.0
    if len(roots) != 1:
        raise ValueError("a sampled draft scores a single child of the root")
    return float(torch.minimum(p, draft.q[roots[0]]).sum())


def verify(draft: Draft, p_rows: torch.Tensor, temperature: float, gen: torch.Generator) -> Verdict:
    """p_rows: (N+1, V) target distributions, row 0 after the root, row i+1 after node i."""
    V = p_rows.size(-1)
    kids = children_of(draft.parents)
    depths = draft.depths
    q_rows = one_hot_rows(V) if draft.q is None else draft.q  # indexed by token, or by node
    # At temperature 0 p is one-hot on the target's argmax, and so is every q: a child is
    # accepted iff it is the argmax, and a rejected sibling leaves p unchanged (max(p - q, 0) = p),
    # so the whole walk needs only the argmax of each row.
    top = p_rows.argmax(-1).tolist() if temperature == 0 else None
    out = Verdict()
    node, p = -1, p_rows[0]
    while True:
        chosen = None
        for c in kids[node]:
            x = draft.tokens[c]
            q = q_rows[x] if draft.q is None else q_rows[c]
            if top is not None:
                px, qx = float(x == top[node + 1]), 1.0 if draft.q is None else float(q[x])
                accept_prob, u, accepted = px, None, px == 1.0
            else:
                px, qx = float(p[x]), 1.0 if draft.q is None else float(q[x])
                accept_prob = 1.0 if px >= qx else px / qx  # qx > 0: x was drawn from q
                u = uniform(gen)
                accepted = u < accept_prob
            out.checks.append(PositionRecord(c, depths[c], x, qx, px, px / qx, accept_prob, u, accepted, None, q, p))
            if accepted:
                chosen = c
                break
            if top is None:
                residual = (p - q).clamp_min(0)
                # p == q exactly leaves nothing; then the rejection had probability 0 in exact
                # arithmetic and p itself is the right distribution to draw from.
                total = float(residual.sum())
                p = residual / total if total > 0 else p
        if chosen is None:
            last = top[node + 1] if top is not None else draw(p, gen)
            if kids[node]:  # every child rejected
                out.residual, out.correction = p, last
            else:  # the whole path was accepted
                out.bonus_p, out.bonus = p, last
            return out
        out.path.append(chosen)
        node, p = chosen, p_rows[chosen + 1]


def verify_nasd_seed(draft: Draft, p_rows: torch.Tensor, temperature: float, gen: torch.Generator) -> Verdict:
    """Seed 004's greedy matching (biased; shown in the app, never the default)."""
    if not draft.is_chain:
        raise ValueError("the seed-004 NASD variant verifies chains only")
    V = p_rows.size(-1)
    out = Verdict()
    for i, x in enumerate(draft.tokens):
        q = one_hot_rows(V)[x] if draft.q is None else draft.q[i]
        s = draw(p_rows[i], gen)
        accepted = s == x
        px, qx = float(p_rows[i][x]), float(q[x])
        out.checks.append(PositionRecord(i, i + 1, x, qx, px, px / qx, px, None, accepted, s, q, p_rows[i]))
        if not accepted:
            # The seed's step: a fresh sample from p, not the s that was just compared.
            out.residual, out.correction = p_rows[i], draw(p_rows[i], gen)
            return out
        out.path.append(i)
    n = len(draft.tokens)
    out.bonus_p, out.bonus = p_rows[n], draw(p_rows[n], gen)
    return out
