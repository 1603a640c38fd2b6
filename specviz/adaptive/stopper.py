"""Adaptive K token by token, for a chain drafter that knows each token's chance of acceptance before
drawing it (``Stopper``).

The per-round rule (specviz/adaptive/policy.py) fixes K before the round's draft is made. A Stopper
instead decides on each token before it is drawn, from past rounds and the tokens drawn so far: the
draft's length is then a stopping time, which keeps it exact.
"""

from dataclasses import replace

from specviz.core.choice import MIN_GAIN, Choice


class Stopper:
    """Adaptive K for a chain drafter that can say, before it draws each token, how likely that token is to
    be accepted (``Drafter.estimates``: the distilled table's agreement at T = 0). Rather than fix K
    before the round from alpha alone, the drafter asks before each token (``__call__``), and the round
    drafts it only while some deeper K still promises more tokens per unit of time than stopping here:
    E(K) from the estimates so far, the next token's, and alpha for the levels not yet seen; at the first
    token, MIN_GAIN times plain decoding's rate. A confident run of characters is drafted deep, and a draft
    stops just before a character the table is unsure of, where a K fixed in advance would either stop early
    everywhere or pay for doomed tokens.

    Exactness: each decision uses only the tokens already drawn (the next token's estimate is a function
    of the context it will be drawn from), so the draft length is a stopping time, as the accept/reject
    rule requires; at T = 0 any draft leaves the output the greedy text.

    Measured offline on the target's greedy text, stopping by the table's agreement gave more tokens per
    unit of cost than the best fixed K, and the agreement needed no recalibration (docs/notes/adaptive.md).
    """

    def __init__(self, choice: Choice):
        """``choice``: the round's Choice as alpha alone would make it (its alpha, costs and k_max)."""
        self.start = choice
        self.drafted = 0
        self.e, self.prob, self.rate = 1.0, 1.0, 1.0  # E, P(every token drafted so far accepted), E / cost
        self.estimates: list[float] = []

    def __call__(self, a: float) -> bool:
        """Whether to draw the next token, accepted with probability ``a`` if every token before it is."""
        j, alpha, costs = self.drafted, self.start.alpha, self.start.costs
        if j >= self.start.k_max:
            return False
        self.estimates.append(a)
        need = MIN_GAIN if j == 0 else self.rate
        prob = self.prob * a
        e = self.e + prob
        for k in range(j + 1, self.start.k_max + 1):  # usually the first K beats it: a confident next token
            if k > j + 1:
                prob *= alpha
                e += prob
            if e / costs[k] > need:
                self.prob *= a
                self.e += self.prob
                self.drafted = j + 1
                self.rate = self.e / costs[j + 1]
                return True
        return False

    def result(self) -> Choice:
        """The round's choice: K = the tokens drawn, with the estimates behind it."""
        return replace(self.start, k=self.drafted, estimates=tuple(self.estimates))
