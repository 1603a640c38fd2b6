"""Adaptive K (``--k auto``): before each round, choose the draft depth that maximises expected
tokens per unit of time, from past rounds only. What a round of depth K is worth, and the best K:
specviz/adaptive/rates.py; a drafter stopped token by token: specviz/adaptive/stopper.py.
Measurements and what was tried: docs/notes/adaptive.md.

The acceptance alpha is estimated from past rounds: each level the target checked is a trial, a
success if a drafted token there was accepted (a chain's first rejection ends its trials; a tree
level is a success if any child was). Successes and trials decay by ``DECAY`` per round, so the
estimate follows the text, and a Beta prior keeps the first rounds sensible. In a big batch they decay
more slowly (price_for; why: specviz/adaptive/load.py).

A K = 0 round still learns, almost for free: the target's pass gives p for the next token anyway, so
a cheap drafter (cost at most ``SHADOW_COST``), every ``SHADOW_EVERY``-th idle round (rarer for a
drafter whose every call costs more, so shadows, their scoring included, stay within
``SHADOW_BUDGET``), proposes one level that is scored but never verified,
by the probability that the lossless rule would have accepted it (verifiers.expected_acceptance). That
observation is a fractional trial, so alpha follows the text while drafting does not pay. An
expensive drafter (the neural draft, an EAGLE head) is not consulted while idle: it would have to
catch up on every token it missed. So it starts idle, whatever the prior says (the prior is no
evidence, and nothing would ever correct it), never drafts at all, and the engine keeps nothing ready
for it (``never_drafts``): its rounds cost what plain decoding's do. Other remedies (an optimistic
start, backed-off shadows, a cautious resume, a calibration, retiring idle drafters) were measured and
not kept: docs/notes/adaptive.md.

The choice depends only on past rounds, on constants and on the cost curve the run was given (measured
once, before it), never on the clock: a run is the same for the same seed and curve, and exactness
holds because K is fixed before the round's draft is made.
"""

import math
from dataclasses import replace

from specviz.adaptive.costs import REFERENCE, CostCurve, Drafting
from specviz.adaptive.rates import best_k, rates, round_costs
from specviz.adaptive.stopper import Stopper
from specviz.core.choice import MIN_GAIN, Choice

AUTO_K_MAX = 12  # --k auto: the deepest draft adaptive K may choose
DECAY = 0.9  # weight of the past per round: about the last 10 rounds count
PRIOR = (1.0, 1.0)  # Beta(successes, failures) prior on alpha
SHADOW_COST = 0.1  # drafters at most this costly are scored in K = 0 rounds
SHADOW_EVERY = 4  # ... every 4th such round at most: alpha moves slowly, and a shadow draft is not free
# ... and no more often than keeps their cost, spread over the idle rounds, at this share of a forward pass:
# a drafter with a fixed cost per call (suffix decoding searches its text and the corpus) shadows more rarely.
SHADOW_BUDGET = 0.01
# A shadow costs more than its draft call: scoring it (verifiers.expected_acceptance) and a slower round,
# whose every small op runs on caches the drafter's look-up and the target's pass have flushed (measured:
# docs/notes/adaptive.md).
SHADOW_SCORE = 0.03


class AdaptiveK:
    def __init__(self, k_max: int, draft_cost: float, call_cost: float = 0.0, extra: int = 0,
                 nodes_per_level: float = 1.0, curve: CostCurve = REFERENCE, max_nodes: int = 0,
                 level_cost: float = 0.0):  # fmt: skip
        """``draft_cost``: per drafted token; ``call_cost``: per draft call, whatever its size (both in
        target forward passes); ``extra``: tokens a drafting round adds to the verify pass;
        ``nodes_per_level``: drafted tokens per level assumed until a draft is seen. The drafter's own
        figures: Drafter.draft_cost, call_cost, verify_extra, nodes_per_level (and max_depth caps k_max).
        ``curve``: what a verify pass costs on this machine (specviz/adaptive/costs.py); ``max_nodes``: the most
        tokens a draft can hold (a budgeted tree's budget, Drafter.max_nodes; 0: no cap); ``level_cost``: per
        depth level drafted, whatever its width (Drafter.level_cost)."""
        self.k_max, self.curve, self.max_nodes = k_max, curve, max_nodes
        self.c, self.extra, self.nodes_per_level, self.level_cost = draft_cost, extra, nodes_per_level, level_cost
        self.call_cost = call_cost
        self.successes, self.trials = 0.0, 0.0
        self.tokens, self.levels = 0.0, 0.0  # drafted tokens and depth levels, decayed
        self.idle = 0  # K = 0 rounds in a row (idle_round counts them)
        self._last: tuple[int, Choice] | None = None  # (limit, choice) while nothing new was learnt
        self.scale = 1.0  # a drafted token's price over its price alone (price_for: a batch's load)
        self.priced = draft_cost  # per drafted token as priced now: the declared cost, or drafting measured here
        self.drafting: Drafting | None = None  # drafting as measured on this CPU (price_for), None: the declared costs
        self.decay = DECAY  # the past's weight per round (price_for: a big batch's longer memory)
        self._space_shadows()

    def price_for(self, curve: CostCurve, scale: float = 1.0, drafting: Drafting | None = None,
                  decay: float = DECAY) -> None:  # fmt: skip
        """Price the next rounds for a load (specviz/adaptive/load.py, LoadCosts.price): ``curve`` v(N) for a round
        in the batch (a drafting round's fixed cost included), ``scale`` the drafting's price over its price alone
        (a sequence drafts on its own, while its share of the round shrinks), ``drafting`` what drafting measured
        on this CPU (None: the declared costs), which prices drafted tokens and spaces the shadow drafts, and
        ``decay`` the past's weight per round from now on. What the drafter is (costly to shadow or not) is
        unchanged: that is decided on its declared cost."""
        self.decay = decay  # weighs the next rounds only: the choice from what was learnt stands
        if curve is self.curve and scale == self.scale and drafting is self.drafting:
            return  # a batch prices its sequences every round, mostly as the round before
        self.curve, self.scale, self.drafting, self._last = curve, scale, drafting, None
        self.priced = self.c if drafting is None else drafting.per_token
        self._space_shadows()

    def _space_shadows(self) -> None:
        """``shadow_every``: one shadow draft (its call, a token and a level, and its scoring), priced as drafting is
        now, spread over that many idle rounds stays within SHADOW_BUDGET of the sequence's round, which in a batch
        is ``scale`` times smaller."""
        call = self.call_cost if self.drafting is None else self.drafting.per_call
        shadow = SHADOW_SCORE + call + self.level_cost + self.priced
        self.shadow_every = max(SHADOW_EVERY, math.ceil(shadow * self.scale / SHADOW_BUDGET - 1e-9))

    @property
    def alpha(self) -> float:
        a, b = PRIOR
        return (self.successes + a) / (self.trials + a + b)

    @property
    def per_level(self) -> float:
        return self.tokens / self.levels if self.levels else self.nodes_per_level

    def choose(self, limit: int) -> Choice:
        """The K for the next round, at most ``limit`` (the engine's own bound). Runs every round,
        so an idle drafter that learns nothing new (no shadow drafts) reuses its last answer; a K = 0
        answer also holds for a smaller limit (the rates up to it are a prefix of the same list), which
        the last rounds before a window jump and before max_new_tokens have (~30 a generation)."""
        if self._last is not None:
            last_limit, last = self._last
            if last_limit == limit:
                return last
            if last.k == 0 and limit < last_limit:
                k_max = min(self.k_max, limit)
                choice = replace(last, k_max=k_max, costs=last.costs[: k_max + 1])
                self._last = (limit, choice)
                return choice
        choice = self._best(min(self.k_max, limit))
        self._last = (limit, choice)
        return choice

    def _best(self, k_max: int) -> Choice:
        """The choice from what was learnt so far, among K = 0 .. k_max; K = 0 for a drafter too costly
        to shadow that has learnt nothing (it never will: see the module docstring)."""
        alpha, n, e = self.alpha, self.per_level, self.extra
        c, lc = self.priced * self.scale, self.level_cost * self.scale  # priced for the load (1: alone)
        costs = round_costs(n, c, k_max, e, self.curve, self.max_nodes, lc)
        if self.c > SHADOW_COST and not self.trials:
            return Choice(0, alpha, n, c, k_max, e, costs, lc)
        k = best_k(alpha, n, c, k_max, e, self.curve, self.max_nodes, lc)
        return Choice(k, alpha, n, c, k_max, e, costs, lc)

    def stopper(self, limit: int) -> Stopper:
        """The rule for a round of a drafter that weighs each token before drawing it (see Stopper), up to
        K = ``limit`` (and k_max). Such a drafter is asked every round: no idle rounds, no shadows."""
        k_max = min(self.k_max, limit)
        c, lc = self.priced * self.scale, self.level_cost * self.scale
        costs = round_costs(self.per_level, c, k_max, self.extra, self.curve, self.max_nodes, lc)
        return Stopper(Choice(k_max, self.alpha, self.per_level, c, k_max, self.extra, costs, lc))

    def idle_round(self) -> bool:
        """Count a round that chose K = 0 (once per such round: update() is for rounds that drafted,
        so an idle round makes one call here, not two; each cost ~2 us in a round). -> whether it
        should score an unverified one-level draft."""
        due = self.idle % self.shadow_every == 0 and self.c <= SHADOW_COST
        self.idle += 1
        return due

    def never_drafts(self) -> bool:
        """Whether no round from now on can draft, not even a shadow: either no acceptance could
        make drafting pay (every level accepted, one token a level: a window too wide to verify), or
        the drafter is too costly to shadow and K = 0 wins even at the deepest K allowed. Only a
        round that drafts (or a shadow) changes what was learnt, and a smaller limit only drops
        candidates (the rates up to it are a prefix of the same list), so K = 0 wins every later
        round too: the engine may stop keeping the drafter ready (its features, its updates)."""
        if max(rates(1.0, 1.0, self.c, self.k_max, self.extra, self.curve, self.max_nodes, self.level_cost)) < MIN_GAIN:
            return True
        return self.c > SHADOW_COST and self._best(self.k_max).k == 0

    def observe(self, acceptance: float) -> None:
        """A K = 0 round's unverified one-level draft, accepted with this probability."""
        self._last = None
        self.successes = self.decay * self.successes + acceptance
        self.trials = self.decay * self.trials + 1

    def update(self, k: int, drafted: int, depth: int, accepted: int) -> None:
        """After a round that chose K = k > 0 and drafted ``drafted`` tokens, ``depth`` levels deep
        (at most k), and accepted ``accepted`` levels."""
        if k:
            self.idle = 0
        if depth == 0:
            return
        self._last = None
        trials = accepted + (1 if accepted < depth else 0)
        d = self.decay
        self.successes = d * self.successes + accepted
        self.trials = d * self.trials + trials
        self.tokens = d * self.tokens + drafted
        self.levels = d * self.levels + depth
