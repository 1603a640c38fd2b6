"""Adaptive K's choice in one round, as plain data: the K it drafted and the model's inputs behind it,
recorded in RoundRecord.k_choice (specviz/core/record.py) and charted by specviz/charts/adaptive.py.
The rule that makes it: specviz/adaptive/policy.py."""

from dataclasses import dataclass

# Draft only if it promises 5% more tokens per unit of time than K = 0: a margin for what the model
# leaves out (specviz/adaptive/rates.py). Margins from 1.03 to 1.3 were measured against the baseline:
# docs/notes/adaptive.md.
MIN_GAIN = 1.05


def expected_tokens(alpha: float, k: int) -> float:
    return float(k + 1) if alpha >= 1.0 else (1.0 - alpha ** (k + 1)) / (1.0 - alpha)


@dataclass
class Choice:
    """Why a round drafted K levels: the model's inputs and its tokens per cost for K = 0, 1, ..."""

    k: int
    alpha: float
    per_level: float  # drafted tokens per depth level (1 for chains)
    draft_cost: float  # c, per drafted token, in target forwards
    k_max: int  # the largest K it could choose this round
    extra: int = 0  # e, tokens every drafting round adds to the verify pass (Drafter.verify_extra)
    costs: tuple[float, ...] = ()  # round_cost for K = 0 .. k_max, on the run's cost curve
    level_cost: float = 0.0  # l, per depth level drafted (Drafter.level_cost)
    # A drafter that weighs each token before drawing it (Stopper): the chance of acceptance it gave each
    # position it looked at, the last one the first it did not draw (when it stopped before k_max).
    estimates: tuple[float, ...] = ()

    def expected(self, k: int) -> float:
        """E(K): the i.i.d. model's, or with the drafter's estimates for the positions they cover."""
        if not self.estimates:
            return expected_tokens(self.alpha, k)
        e, prob = 1.0, 1.0
        for i in range(k):
            prob *= self.estimates[i] if i < len(self.estimates) else self.alpha
            e += prob
        return e

    def candidates(self) -> list[dict]:
        """Per K weighed: expected tokens, cost and their ratio (for display)."""
        return [{"k": k, "expected_tokens": self.expected(k), "cost": cost, "tokens_per_cost": self.expected(k) / cost}
                for k, cost in enumerate(self.costs)]  # fmt: skip
