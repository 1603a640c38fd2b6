"""FLy, from "Training-Free Loosely Speculative Decoding: Accepting Semantically Correct Drafts
Beyond Exact Match" (Li et al., 2025), kept as a labelled LOSSY verifier of chains.

FLy loosens the token-wise check with two tiers. Walk the chain as token-wise verification does:
drafted token x_i (from q_i) against the target's p_i is *matched* when the usual test passes
(u < min(1, p_i(x)/q_i(x)); at temperature 0, x is the argmax). At a mismatch:

1. the entropy gate: where the target is nearly sure, H(p_i) <= theta, the mismatch is a genuine
   error and the round ends there, with the correction drawn from the residual, as token-wise;
2. the deferred window: where the target is unsure, H(p_i) > theta, the rejection is deferred.
   The next W - 1 drafted tokens are checked as usual (the target has read x_i before them, in the
   same pass). If all W - 1 are matched, the target carried on with the draft's variant as it
   would with its own wording, so x_i is kept, and the walk goes on after it. If one is not, or
   the chain ends before W - 1 more tokens, x_i is rejected as usual.

H(p) = -sum p log p in nats, of the target's distribution at the run's temperature. theta and W
are the knobs fly_entropy and fly_window (specviz/core/settings.py).

Why it is lossy: a token the usual test rejected is sometimes emitted anyway, so at a high-entropy
position x comes out with probability above p(x) whenever the drafter favours it, and the exactness
lab calls it biased at every temperature above 0. At temperature 0 p is one-hot, H(p) = 0 never
exceeds theta, and no rejection is deferred: FLy is greedy decoding exactly. (The paper decodes
greedily and gates on the entropy of the target's logits, so there it is lossy at T = 0 as well;
here the verifier sees only the tempered p, whose entropy at T = 0 is zero.)
"""

import torch

from specviz.core.record import PositionRecord
from specviz.core.sampling import draw, uniform
from specviz.drafters.base import Draft
from specviz.verifiers.base import Verdict, Verifier, proposal_rows
from specviz.verifiers.tokenwise import residual

THETA = 0.3  # the entropy gate's default, nats: the paper's threshold
WINDOW = 3  # the deferred window's default W: a deferred token needs its W - 1 successors matched


def entropy(p: torch.Tensor) -> float:
    """H(p) = -sum p log p in nats, 0 log 0 = 0. (V,) -> float"""
    return float(-(p * p.clamp_min(1e-300).log()).sum())


class FLy(Verifier):
    name = "fly"
    lossless = False
    trees = False
    summary = ("FLy: a mismatch where the target is unsure (entropy above theta) is kept if the next W - 1 "
               "drafted tokens match; faster, NOT exact")  # fmt: skip
    paper = "FLy: Training-Free Loosely Speculative Decoding (Li et al., 2025)"
    panels = ("fly gate",)
    showcase = ("neural",)
    how = "checked by FLy: a rejection at a high-entropy position deferred, and forgiven if the window matches"

    def __init__(self, theta: float = THETA, window: int = WINDOW):
        self.theta = theta  # the entropy gate, nats: a mismatch with H(p) above it may be deferred
        self.window = window  # W: the deferred token and the W - 1 drafted tokens that must match after it

    def configured(self, settings) -> "FLy":
        return FLy(settings.fly_entropy, settings.fly_window)

    def verify(self, draft: Draft, p_rows: torch.Tensor, temperature: float, gen: torch.Generator) -> Verdict:
        if not draft.is_chain:
            raise ValueError("FLy verifies chains only")
        n, q_rows = len(draft.tokens), proposal_rows(draft, p_rows.size(-1))
        checks: dict[int, PositionRecord] = {}  # position -> its usual check, made once, in position order

        def check(i: int) -> PositionRecord:
            if i not in checks:
                x, p, q = draft.tokens[i], p_rows[i], q_rows[i]
                px, qx = float(p[x]), float(q[x])
                if temperature == 0:
                    accept_prob, u = float(x == int(p.argmax())), None
                    matched = accept_prob == 1.0
                else:
                    accept_prob, u = min(1.0, px / qx), uniform(gen)
                    matched = u < accept_prob
                checks[i] = PositionRecord(i, i + 1, x, qx, px, px / qx, accept_prob, u, matched, None, q, p)
            return checks[i]

        out, deferred, entropies = Verdict(), [], []
        for i in range(n):
            c = check(i)
            h = entropy(p_rows[i])
            entropies.append(h)
            if not c.accepted:
                followers = range(i + 1, i + self.window)
                if h > self.theta and i + self.window <= n and all(check(j).accepted for j in followers):
                    deferred.append(i)  # kept: the target went on with the variant
                    c = PositionRecord(**{**vars(c), "accepted": True})
                else:
                    out.checks.append(c)
                    out.residual = residual(p_rows[i], q_rows[i])
                    out.correction = draw(out.residual, gen)
                    break
            out.checks.append(c)
            out.path.append(i)
        else:
            out.bonus_p, out.bonus = p_rows[n], draw(p_rows[n], gen)
        out.notes = {"rule": self.name, "theta": self.theta, "window": self.window, "deferred": deferred,
                     "entropy": [round(h, 4) for h in entropies]}  # fmt: skip
        return out


__all__ = ["FLy", "entropy"]
