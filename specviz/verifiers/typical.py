"""Medusa's typical acceptance (Cai et al., 2024), kept as a labelled LOSSY verifier.

At a node with the target's distribution p (at the run's temperature), a drafted child x is
accepted when the target finds it *typical enough*:

    p(x) > min(epsilon, delta * exp(-H(p)))          H(p) = -sum p log p

no uniform draw, no q. The first child that passes is taken; where none does, the round's last
token is drawn from p itself (not from a residual). The threshold falls as the target grows
unsure (high entropy), so more drafted tokens pass where many continuations are plausible. That
is why it is faster: tokens the target would have produced only sometimes are kept every time.
It is not exact: a token with p(x) above the threshold is emitted whenever it is drafted, so the
drafter's preferences leak into the output, and the exactness lab calls it biased. At temperature
0 p is one-hot, H(p) = 0 and only the argmax passes: greedy, and so exact.

epsilon = 0.09 and delta = 0.3 are the defaults of Medusa's reference code (posterior threshold
and alpha).
"""

import math

import torch

from specviz.core.record import PositionRecord
from specviz.core.sampling import draw
from specviz.drafters.base import Draft
from specviz.verifiers.base import Verdict, Verifier, children_of, proposal_rows

EPSILON, DELTA = 0.09, 0.3


def typical_threshold(p: torch.Tensor, epsilon: float = EPSILON, delta: float = DELTA) -> float:
    """min(epsilon, delta * exp(-H(p))) for one distribution (V,)."""
    entropy = float(-(p * p.clamp_min(1e-300).log()).sum())
    return min(epsilon, delta * math.exp(-entropy))


class Typical(Verifier):
    name = "typical"
    lossless = False
    summary = "Medusa's typical acceptance: keep x if p(x) > min(0.09, 0.3 exp(-H(p))); faster, NOT exact"
    paper = "Medusa (Cai et al., 2024): typical acceptance"
    showcase = ("medusa",)
    how = "accepted by typical acceptance (p above an entropy-scaled floor)"

    def verify(self, draft: Draft, p_rows: torch.Tensor, temperature: float, gen: torch.Generator) -> Verdict:
        kids = children_of(draft.parents)
        depths = draft.depths
        q_rows = proposal_rows(draft, p_rows.size(-1))
        out = Verdict()
        node, thresholds = -1, []
        while True:
            p = p_rows[node + 1]
            bar = typical_threshold(p)
            thresholds.append(bar)
            chosen = None
            for c in kids[node]:
                x, q = draft.tokens[c], q_rows[c]
                px, qx = float(p[x]), float(q[x])
                accepted = px > bar
                out.checks.append(
                    PositionRecord(c, depths[c], x, qx, px, px / qx, float(accepted), None, accepted, None, q, p)
                )
                if accepted:
                    chosen = c
                    break
            if chosen is None:
                last = draw(p, gen)  # from p itself: Medusa's rule, not a residual
                if kids[node]:
                    out.residual, out.correction = p, last
                else:
                    out.bonus_p, out.bonus = p, last
                out.notes = {"rule": "typical", "epsilon": EPSILON, "delta": DELTA, "thresholds": thresholds}
                return out
            out.path.append(chosen)
            node = chosen
