"""Seed 004's NASD rule, kept as a labelled variant because it is NOT lossless: it samples
s ~ p, accepts while s equals the draft, and then draws the correction afresh from p, so a
drafted token is emitted with probability p(x)(2 - p(x)) instead of p(x)."""

import torch

from specviz.core.record import PositionRecord
from specviz.core.sampling import draw
from specviz.drafters.base import Draft
from specviz.verifiers.base import Verdict, Verifier, proposal_rows


class NASDSeed(Verifier):
    name = "nasd-seed"
    lossless = False
    trees = False
    summary = "NASD's own greedy matching: sample s ~ p, accept while s = x, correct from p afresh (biased)"
    paper = "N-gram Assisted Speculative Decoding (NASD): its verification rule"
    showcase = ("nasd",)
    how = "checked by NASD's own greedy-matching rule"

    def verify(self, draft: Draft, p_rows: torch.Tensor, temperature: float, gen: torch.Generator) -> Verdict:
        if not draft.is_chain:
            raise ValueError("the seed-004 NASD variant verifies chains only")
        q_rows = proposal_rows(draft, p_rows.size(-1))
        out = Verdict()
        for i, x in enumerate(draft.tokens):
            q, p = q_rows[i], p_rows[i]
            s = draw(p, gen)
            accepted = s == x
            px, qx = float(p[x]), float(q[x])
            out.checks.append(PositionRecord(i, i + 1, x, qx, px, px / qx, px, None, accepted, s, q, p))
            if not accepted:
                # The seed's step: a fresh sample from p, not the s that was just compared.
                out.residual, out.correction = p, draw(p, gen)
                return out
            out.path.append(i)
        n = len(draft.tokens)
        out.bonus_p, out.bonus = p_rows[n], draw(p_rows[n], gen)
        return out
