"""Block verification (Sun, Mendlovic, Leviathan, Aharoni, Ro, Beirami and Suresh, ICLR 2025):
decide a drafted chain X_1 .. X_K jointly instead of token by token.

With p_i, q_i the target's and the draft's distributions of X_i (given X_1 .. X_{i-1}):

    weight   w_0 = 1,  w_i = min(1, w_{i-1} p_i(X_i) / q_i(X_i))
    residual r_i = max(w_i p_{i+1} - q_{i+1}, 0)                      (i < K; a (V,) vector)
    stop     h_i = sum(r_i) / (sum(r_i) + 1 - w_i) for 0 < i < K,  h_K = w_K,  h_0 = 1

Draw eta_i ~ U(0, 1) for i = 1 .. K and keep tau = max{i : eta_i < h_i} (0 if none) tokens.
Then the round's last token is the bonus, drawn from p_{K+1}, if tau = K, else the correction,
drawn from norm(r_tau). At tau = 0 that residual is token-wise verification's max(p_1 - q_1, 0).

w_i is the weight that the accepted prefix X_1 .. X_i still carries: the probability ratio of
the whole prefix, capped at 1 as it goes. Token-wise verification throws a prefix away at its
first token with p < q; block verification lets a later token with p > q make up for it, and
stops only where the leftover mass (the residual) is better spent on a fresh draw. The paper
proves the output is distributed as the target's and that the expected number of accepted
tokens is the largest of any valid verifier that sees the same draft and distributions; for
one draft it can be lower than token-wise (tests/unit/test_block.py enumerates both). At temperature
0 every h is 0 or 1 and tau is the matched prefix: the same tokens as token-wise, no draws.
"""

import torch

from specviz.core.record import PositionRecord
from specviz.core.sampling import draw, uniform
from specviz.drafters.base import Draft
from specviz.verifiers.base import Verdict, Verifier, proposal_rows


def block_terms(draft: Draft, p_rows: torch.Tensor) -> tuple[list[float], list[float], list[torch.Tensor]]:
    """weights w_1..w_K, stops h_1..h_K and unnormalised residuals r_0..r_{K-1} (each (V,))."""
    q_rows = proposal_rows(draft, p_rows.size(-1))  # (K, V)
    K = len(draft.tokens)
    w, weights, stops, residuals = 1.0, [], [], []
    for i in range(K):
        r = (w * p_rows[i] - q_rows[i]).clamp_min(0)  # r_i: what a stop before X_{i+1} draws from
        residuals.append(r)
        if i > 0:  # h_i for the prefix of length i (its w is the current one)
            mass = float(r.sum())
            stops.append(mass / (mass + 1 - w) if mass + 1 - w > 0 else 0.0)
        x = draft.tokens[i]
        w = min(1.0, w * float(p_rows[i][x]) / float(q_rows[i][x]))
        weights.append(w)
    if K:
        stops.append(weights[-1])  # h_K = w_K
    return weights, stops, residuals


def expected_accepted(draft: Draft, p_rows: torch.Tensor) -> dict[str, float]:
    """Expected accepted tokens for this draft under token-wise and block verification (no
    draws): token-wise sum_j prod_{i<=j} min(1, p_i/q_i); block sum_j j h_j prod_{l>j} (1 - h_l)."""
    q_rows = proposal_rows(draft, p_rows.size(-1))
    tokenwise, reach = 0.0, 1.0
    for i, x in enumerate(draft.tokens):
        reach *= min(1.0, float(p_rows[i][x]) / float(q_rows[i][x]))
        tokenwise += reach
    _, stops, _ = block_terms(draft, p_rows)
    block, none_after = 0.0, 1.0
    for j in range(len(stops), 0, -1):
        block += j * stops[j - 1] * none_after
        none_after *= 1 - stops[j - 1]
    return {"lossless": tokenwise, "block": block}


class Block(Verifier):
    name = "block"
    trees = False
    paper = "Block verification (Sun et al., 2024)"
    showcase = ("trigram",)
    how = "verified as a block"
    bench_on = "chains"
    panels = ("block weights",)
    summary = (
        "block verification: decide the whole chain jointly from the residual masses (lossless, never fewer on average)"
    )

    def verify(self, draft: Draft, p_rows: torch.Tensor, temperature: float, gen: torch.Generator) -> Verdict:
        if not draft.is_chain:
            raise ValueError("block verification verifies chains only")
        q_rows = proposal_rows(draft, p_rows.size(-1))
        weights, stops, residuals = block_terms(draft, p_rows)
        K = len(draft.tokens)
        # eta_j < h_j: P = h_j exactly, and h = 0 never passes (temperature 0 draws nothing)
        etas = [None if temperature == 0 else uniform(gen) for _ in range(K)]
        passed = [h >= 1.0 if e is None else e < h for e, h in zip(etas, stops, strict=True)]
        tau = max((j + 1 for j in range(K) if passed[j]), default=0)
        out = Verdict()
        for i, x in enumerate(draft.tokens):
            q, p = q_rows[i], p_rows[i]
            px, qx = float(p[x]), float(q[x])
            out.checks.append(PositionRecord(i, i + 1, x, qx, px, px / qx, stops[i], etas[i], i < tau, None, q, p))
        out.path = list(range(tau))
        if tau == K:
            out.bonus_p = p_rows[K]
            out.bonus = draw(out.bonus_p, gen)
        else:
            r = residuals[tau]
            total = float(r.sum())
            out.residual = r / total if total > 0 else p_rows[tau]  # nothing left: p itself (probability-0 event)
            out.correction = draw(out.residual, gen)  # one-hot at temperature 0: no draw
        out.notes = {"rule": "block", "weights": weights, "stops": stops, "etas": etas, "tau": tau,
                     "expected_accepted": expected_accepted(draft, p_rows)}  # fmt: skip
        return out
