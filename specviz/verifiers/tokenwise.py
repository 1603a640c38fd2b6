"""Token-wise lossless verification (Leviathan et al. 2023; Chen et al. 2023), walked down a
chain or a tree (SpecInfer's multi-step speculative sampling, Miao et al. 2024).

At a node of the draft (the root is the last generated token) with target distribution p, try
its children one after another; child x, proposed from q, is accepted with probability
min(1, p(x)/q(x)). On rejection p becomes the residual norm(max(0, p - q)) and the next child
is tried against it (its q depends on how the siblings were drawn: see multidraft.py). If every
child is rejected, the correction is drawn from what is left; if the node has no children (the
whole path was accepted), the bonus token is drawn from p. For a one-hot q this is "accept with
p(x), else zero p(x) and renormalise", lossless at every temperature. At temperature 0 p is
one-hot: a child is accepted exactly when it is the target's argmax, and no randomness is used.

Why it is lossless, by induction over the tries at one node: the first child is emitted with
probability min(p, q)(x); otherwise, with probability 1 - sum min(p, q), the procedure goes on
with p' = (p - q)+ / (1 - sum min(p, q)), which by induction it emits exactly, whatever the next
child's q. In total min(p, q) + (p - q)+ = p.
"""

import torch

from specviz.core.record import PositionRecord
from specviz.core.sampling import draw, uniform
from specviz.drafters.base import Draft
from specviz.verifiers.base import Verdict, Verifier, children_of, one_hots, proposal_rows
from specviz.verifiers.multidraft import SAMPLINGS, next_sibling_q, sibling_rows


def residual(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """norm(max(0, p - q)), the target's distribution after a rejection of a draw from q. (V,)"""
    r = (p - q).clamp_min(0)
    total = float(r.sum())
    # p == q exactly leaves nothing; then the rejection had probability 0 in exact arithmetic
    # and p itself is the right distribution to go on with.
    return r / total if total > 0 else p


class TokenWise(Verifier):
    name = "lossless"
    summary = "token by token from the root: accept x with min(1, p(x)/q(x)), else go on with the residual"

    def sampling(self, draft: Draft) -> str | None:
        """How the verifier takes the draft's siblings to have been drawn: as the draft says."""
        return draft.sampling

    def rows(self, draft: Draft, V: int) -> torch.Tensor:
        """The q each node is tried against, (N, V) (the walk derives only the rows it tries)."""
        return sibling_rows(draft, V, self.sampling(draft))

    def verify(self, draft: Draft, p_rows: torch.Tensor, temperature: float, gen: torch.Generator) -> Verdict:
        if not draft.tokens:  # plain decoding (an idle round): the bonus from the root's row, nothing to walk
            p = p_rows[0]
            return Verdict(bonus_p=p, bonus=draw(p, gen))  # one-hot at temperature 0: no randomness
        V = p_rows.size(-1)
        kids = children_of(draft.parents)
        deterministic = draft.q is None
        # The q each child is tried against, derived only for the children tried (self.rows would
        # build all N: ~200 us a round for a sampled tree of 16 nodes): a deterministic child's is a
        # row of the identity; a sampled node's first child's is its draft row, and each later
        # sibling's follows from the one before as the draft's sampling says (multidraft.py).
        q_rows = one_hots(V) if deterministic else draft.q
        sampling = self.sampling(draft)
        lazy = sampling in SAMPLINGS
        # At temperature 0 p is one-hot on the target's argmax, and so is every q: a child is
        # accepted iff it is the argmax, and a rejected sibling leaves p unchanged (max(p - q, 0) = p),
        # so the whole walk needs only the argmax of each row.
        top = p_rows.argmax(-1).tolist() if temperature == 0 else None
        out = Verdict()
        node, p = -1, p_rows[0]
        while True:
            chosen = None
            for i, c in enumerate(kids[node]):
                x = draft.tokens[c]
                if deterministic:
                    q = q_rows[x]
                elif i and lazy:  # a later sibling: drawn from what the one before left
                    q = next_sibling_q(q, draft.tokens[kids[node][i - 1]], sampling)
                else:
                    q = q_rows[c]
                qx = 1.0 if deterministic else float(q[x])
                if top is not None:
                    px = float(x == top[node + 1])
                    accept_prob, u, accepted = px, None, px == 1.0
                else:
                    px = float(p[x])
                    accept_prob = 1.0 if px >= qx else px / qx  # qx > 0: x was drawn from q
                    u = uniform(gen)
                    accepted = u < accept_prob
                out.checks.append(
                    PositionRecord(c, len(out.path) + 1, x, qx, px, px / qx, accept_prob, u, accepted, None, q, p)
                )
                if accepted:
                    chosen = c
                    break
                if top is None:
                    # a one-hot q leaves p without x, renormalised: two ops (p(x) - p(x) * 1 is exactly 0)
                    p = p.sub(q, alpha=px).div_(1.0 - px) if deterministic else residual(p, q)
            if chosen is None:
                last = top[node + 1] if top is not None else draw(p, gen)
                if kids[node]:  # every child rejected
                    out.residual, out.correction = p, last
                else:  # the whole path was accepted
                    out.bonus_p, out.bonus = p, last
                return out
            out.path.append(chosen)
            node, p = chosen, p_rows[chosen + 1]


def expected_acceptance(draft: Draft, p: torch.Tensor) -> float:
    """The probability that token-wise verification accepts one of the root's children, given the
    root's target distribution p (V,) and the drafted children, with no randomness. Child i is
    reached when every earlier one was rejected, and then accepted with min(1, p_i(x)/q_i(x)),
    p_i being the residual the earlier rejections left. The last child's acceptance is averaged
    over its draw instead, sum min(p_i, q_i): nothing after it depends on which token it was, so
    the score keeps its expectation and loses variance. (Deterministic children: the sum of p(x).)"""
    roots = [c for c, parent in enumerate(draft.parents) if parent == -1]
    if draft.q is None:  # one-hot, distinct siblings: child i is reached with 1 - p(x_1) - ... - p(x_i-1)
        # and accepted with p(x_i) / that (the residual), so the walk below sums to p(x_1) + ... + p(x_n).
        # Adaptive K scores an idle round this way; the walk costs ~40 us more.
        row = p.tolist()  # one conversion: indexing the tensor costs more per child
        return sum(row[draft.tokens[c]] for c in roots)
    rows = sibling_rows(draft, p.size(-1), draft.sampling)
    total, reach = 0.0, 1.0
    for i, c in enumerate(roots):
        q, x = rows[c], draft.tokens[c]
        last = i == len(roots) - 1
        accept = float(torch.minimum(p, q).sum()) if last else min(1.0, float(p[x]) / float(q[x]))
        total += reach * accept
        reach *= 1 - accept
        p = residual(p, q)
    return total


__all__ = ["TokenWise", "expected_acceptance", "proposal_rows", "residual"]
