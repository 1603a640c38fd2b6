"""The figures the app reports, defined once: running totals over the rounds shown so far, and
the standard model of speculative decoding's expected gain (Leviathan et al., 2023).

    alpha                 acceptance rate: accepted / tried drafted tokens
    tokens per forward    emitted tokens / target forward passes (a round is one pass)
    expected per round    (1 - alpha^(K+1)) / (1 - alpha), if every position is accepted
                          independently with probability alpha and the chain stops at the first
                          rejection
"""

from specviz.core.record import RoundRecord

DEFINITIONS = {
    "rounds": "Rounds so far: each round is one target forward pass.",
    "tokens": "Characters generated so far (prompt not counted).",
    "tokens_per_forward": "Generated characters / target forward passes. Plain decoding makes 1.",
    "acceptance_rate": "alpha = accepted drafted characters / drafted characters the target checked.",
    "expected_per_round": "(1 - alpha^(K+1)) / (1 - alpha): tokens per round if each draft position is "
    "accepted independently with probability alpha.",
    "accepted_length": "Drafted characters accepted in a round (0..K); the round also emits one more.",
    "speedup": "Baseline wall time / this drafter's wall time, for the same characters, measured in one run.",
}


def expected_tokens_per_round(alpha: float, k: int) -> float:
    """(1 - alpha^(K+1)) / (1 - alpha); K + 1 when every draft is accepted."""
    if alpha >= 1.0:
        return k + 1.0
    return (1.0 - alpha ** (k + 1)) / (1.0 - alpha)


def acceptance_by_position(rounds: list[RoundRecord]) -> list[dict]:
    """Per draft depth: how many were tried and accepted. Depth 1 is the first drafted token."""
    tried: dict[int, int] = {}
    accepted: dict[int, int] = {}
    for r in rounds:
        for p in r.positions:
            tried[p.depth] = tried.get(p.depth, 0) + 1
            accepted[p.depth] = accepted.get(p.depth, 0) + p.accepted
    return [
        {"depth": d, "tried": tried[d], "accepted": accepted[d], "rate": accepted[d] / tried[d]} for d in sorted(tried)
    ]


def running_totals(rounds: list[RoundRecord], k: int) -> dict:
    """Totals over ``rounds`` (the ones shown so far), with raw counts next to every rate."""
    n = len(rounds)
    tokens = sum(len(r.emitted) for r in rounds)
    tried = sum(len(r.positions) for r in rounds)
    accepted = sum(r.n_accepted for r in rounds)
    alpha = accepted / tried if tried else 0.0
    return {
        "rounds": n,
        "tokens": tokens,
        "tried": tried,
        "accepted": accepted,
        "tokens_per_forward": tokens / n if n else 0.0,
        "acceptance_rate": alpha,
        "expected_per_round": expected_tokens_per_round(alpha, k) if tried else 1.0,
        "reprefills": sum(r.reprefill for r in rounds),
    }


def p_value_sentence(p_value: float | None, what: str, reference: str, alpha: float) -> str:
    """A chi-square p-value in words, against a level fixed in advance (the exactness lab's ALPHA)."""
    if p_value is None:
        return "Not enough samples for a test yet."
    if p_value < alpha:
        return f"p-value {p_value:.2g} < {alpha}: {what} is NOT distributed as {reference}: a bias, not chance."
    return (f"p-value {p_value:.3g} ≥ {alpha}: no evidence that {what} differs from {reference}; the gaps are the "
            "sampling noise expected of this many draws.")  # fmt: skip
