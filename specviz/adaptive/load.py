"""Adaptive K under load: the prices of a round when B sequences share the target's pass (specviz/core/batch.py).

Alone, a round that verifies N tokens costs v(N) one-token rounds (specviz/adaptive/costs.py). In a batch
every sequence sends its rows to one pass, and what a sequence's N rows cost is what the whole pass costs
when every sequence sends N, over its cost when every sequence sends one: at B = 1 that is v(N); as B grows
the pass turns from reading the weights to arithmetic, and the same N rows cost more (the roofline:
specviz/bench/roofline.py). So for a batch of B the curve is the measured v(N) times how much more the
roofline says N rows a sequence cost at B than alone:

    v_B(N) = v(N) * [t(B N rows, B) / t(B rows, B)] / [t(N rows, 1) / t(1 row, 1)]

and drafting, which each sequence does on its own, is priced against its shrinking share of the pass:
a drafted token's price times B t(1 row, 1) / t(B rows, B). At B = 1 both are the lone sequence's prices,
so a lone run chooses what it chose before. Adaptive K then chooses K per round as always, down to K = 0
where no draft pays (specviz/adaptive/policy.py). The prices depend only on B and the machine's measured
figures, never on the round's draws: K is still fixed before the draft, and the run stays exact.
"""

from collections.abc import Callable

from specviz.adaptive.costs import N_MAX, CostCurve


class LoadCosts:
    """Per batch size, the curve and the drafting scale adaptive K prices rounds with. ``seconds(rows, seqs)``:
    a pass's time over ``rows`` rows of ``seqs`` sequences (a Roofline's, at the bench's context length)."""

    def __init__(self, base: CostCurve, seconds: Callable[[int, int], float]):
        self.base, self.seconds = base, seconds
        self._at: dict[int, tuple[CostCurve, float]] = {}

    def at(self, B: int) -> tuple[CostCurve, float]:
        """(v_B, the drafting's scale) for a batch of B live sequences; the base curve itself at B = 1."""
        if B <= 1:
            return self.base, 1.0
        if B not in self._at:
            t = self.seconds
            lone = [t(n, 1) / t(1, 1) for n in range(1, N_MAX + 1)]
            verify = tuple(self.base.v(n) * (t(B * n, B) / t(B, B)) / lone[n - 1] for n in range(1, N_MAX + 1))
            curve = CostCurve(verify, f"{self.base.source}, priced for a batch of {B}")
            self._at[B] = (curve, B * t(1, 1) / t(B, B))
        return self._at[B]
