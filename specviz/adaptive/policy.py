"""Adaptive K (``--k auto``): before each round, choose the draft depth that maximises expected
tokens per unit of time, from past rounds only. What a round of depth K is worth, and the best K:
specviz/adaptive/rates.py; a drafter stopped token by token: specviz/adaptive/stopper.py.

The acceptance alpha is estimated from past rounds: each level the target checked is a trial, a
success if a drafted token there was accepted (a chain's first rejection ends its trials; a tree
level is a success if any child was). Successes and trials decay by ``DECAY`` per round, so the
estimate follows the text, and a Beta prior keeps the first rounds sensible.

A K = 0 round still learns, almost for free: the target's pass gives p for the next token anyway, so
a cheap drafter (cost at most ``SHADOW_COST``), every ``SHADOW_EVERY``-th idle round (rarer for a
drafter whose every call costs more, so shadows, their scoring included, stay within
``SHADOW_BUDGET``), proposes one level that is scored but never verified,
by the probability that the lossless rule would have accepted it (verifiers.expected_acceptance). That
observation is a fractional trial, so alpha follows the text while drafting does not pay. An
expensive drafter (the neural draft, an EAGLE head) is not consulted while idle: it would have to
catch up on every token it missed. So it starts idle, whatever the prior says (the prior is no
evidence, and nothing would ever correct it), never drafts at all, and the engine keeps nothing ready
for it (``never_drafts``): its rounds cost what plain decoding's do. (An optimistic start, letting
such a drafter draft a few rounds to measure its own acceptance, was tried and measured: it turned
these ties into 1-2% losses, the first drafts' catch-up included, and no drafter won by it; the bench
of 2026-11-23 23:40. It happened again by accident when MIN_GAIN fell to 1.05, for the trees, whose
prior prices one node a level: the neural tree 0.99x, the EAGLE-3 tree 0.97x; the bench of
2026-11-24 08:57.) Backing the shadows off (doubling the wait
after each shadow scored below the estimate, up to 8 times) was tried and measured too: it gained about
1% where drafting never pays and cost drafters that come and go, NASD at T = 0 2.17 -> 1.91 tokens per
forward, the trigram at T = 0.8 1.98 -> 1.86 (5 presets, 256 tokens, 2026-11-24); not kept. Nor was a
cautious estimate to resume drafting after idle rounds (alpha less one standard deviation of its Beta
posterior, against resuming right after lucky shadows: NASD at T = 0.8 resumed at a mean alpha of 0.45
and was accepted 0.31 of the time): the trigram fell 2.07 -> 1.91 tokens per forward at T = 0 and
1.98 -> 1.75 at T = 0.8, suffix decoding 1.51 -> 1.05 at T = 0 (same 5 presets). Four more, measured
against the baseline run alongside (11 presets, 256 tokens, 2026-11-24), were not kept either. Scaling
the expected accepted tokens by what past drafting rounds accepted over what they were predicted to (a
calibration: the rounds that resume after lucky shadows are predicted ~20% too many tokens): the trigram
at T = 0.8 fell 1.47x -> 1.21x, the distilled drafter 2.10x -> 1.96x, and the idle drafters it was meant
to spare gained nothing, their loss being readiness, not drafting. MIN_GAIN 1.3: the trigram at T = 0.8
1.50x -> 1.33x, suffix decoding at T = 0 1.49x -> 1.29x. SHADOW_BUDGET 0.005: suffix decoding at T = 0
1.52x -> 1.43x, NASD 1.55x -> 1.50x, and nothing gained at T = 0.8. Retiring at T > 0 (K = 0 for good
once 12 observations average 0.1 below the break-even alpha): most idle drafters see too few
observations in 256 tokens to retire early (Medusa shadows every 25th idle round), and the paired runs
that were slower stayed slower (trie 19 of 22 either way, Medusa 20 -> 21, prompt lookup 14 -> 17).
Nor counting a round that chose K > 0 but got no draft (no match for the context) as a failed level, so
that the prior stops asking a drafter with nothing to say (the trie at T = 0.8 spent 632 of ~5000 rounds
so, at the prior's alpha): NASD at T = 0.8 fell 1.021x -> 1.004x and prompt lookup 1.020x -> 1.005x
against the baseline run alongside (11 presets x 2), and the trie and lookahead gained nothing; asking
a cheap drafter costs its call, and it drafts again the moment a match comes back. Nor a cheaper trie
shadow (its children unranked, ~2 us instead of ~30 us at shallow matches): the trie at T = 0.8 measured
1.0100x against 1.0094x (11 presets x 2). Lookahead still loses 0.5-1% here, to exploring: without
shadows it ties (0.999x at both temperatures), with them it drafts just after lucky ones, and those
drafts lose; its acceptance does not fall with depth (fixed K = 4, T = 0: 0.44, 0.50, 0.72 by level),
so an alpha per level would not change that (2026-11-24).

The choice depends only on past rounds, on constants and on the cost curve the run was given (measured
once, before it), never on the clock: a run is the same for the same seed and curve, and exactness
holds because K is fixed before the round's draft is made.
"""

import math
from dataclasses import replace

from specviz.adaptive.costs import REFERENCE, CostCurve
from specviz.adaptive.rates import MIN_GAIN, best_k, rates, round_costs
from specviz.adaptive.stopper import Stopper
from specviz.core.choice import Choice

AUTO_K_MAX = 12  # --k auto: the deepest draft adaptive K may choose
DECAY = 0.9  # weight of the past per round: about the last 10 rounds count
PRIOR = (1.0, 1.0)  # Beta(successes, failures) prior on alpha
SHADOW_COST = 0.1  # drafters at most this costly are scored in K = 0 rounds
SHADOW_EVERY = 4  # ... every 4th such round at most: alpha moves slowly, and a shadow draft is not free
# ... and no more often than keeps their cost, spread over the idle rounds, at this share of a forward pass:
# a drafter with a fixed cost per call (suffix decoding searches its text and the corpus) shadows more rarely.
SHADOW_BUDGET = 0.01
# A shadow costs more than its draft call: scoring it (verifiers.expected_acceptance) and a slower round,
# whose every small op runs on caches the drafter's look-up and the target's pass have flushed. Measured
# over the idle rounds of 11 presets at T = 0.8 (1 thread, 2026-11-24): a shadow round's median is
# +45 us over an idle round's ~1210 us for the trie (draft call ~24 us), +36 us for prompt lookup (~16 us).
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
        shadow = SHADOW_SCORE + call_cost + level_cost + draft_cost  # one shadow draft, scored, in target forwards
        self.shadow_every = max(SHADOW_EVERY, math.ceil(shadow / SHADOW_BUDGET - 1e-9))
        self.successes, self.trials = 0.0, 0.0
        self.tokens, self.levels = 0.0, 0.0  # drafted tokens and depth levels, decayed
        self.idle = 0  # K = 0 rounds in a row (idle_round counts them)
        self._last: tuple[int, Choice] | None = None  # (limit, choice) while nothing new was learnt

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
        alpha, n, c, e = self.alpha, self.per_level, self.c, self.extra
        costs = round_costs(n, c, k_max, e, self.curve, self.max_nodes, self.level_cost)
        if c > SHADOW_COST and not self.trials:
            return Choice(0, alpha, n, c, k_max, e, costs, self.level_cost)
        k = best_k(alpha, n, c, k_max, e, self.curve, self.max_nodes, self.level_cost)
        return Choice(k, alpha, n, c, k_max, e, costs, self.level_cost)

    def stopper(self, limit: int) -> Stopper:
        """The rule for a round of a drafter that weighs each token before drawing it (see Stopper), up to
        K = ``limit`` (and k_max). Such a drafter is asked every round: no idle rounds, no shadows."""
        k_max = min(self.k_max, limit)
        costs = round_costs(self.per_level, self.c, k_max, self.extra, self.curve, self.max_nodes, self.level_cost)
        return Stopper(Choice(k_max, self.alpha, self.per_level, self.c, k_max, self.extra, costs, self.level_cost))

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
        self.successes = DECAY * self.successes + acceptance
        self.trials = DECAY * self.trials + 1

    def update(self, k: int, drafted: int, depth: int, accepted: int) -> None:
        """After a round that chose K = k > 0 and drafted ``drafted`` tokens, ``depth`` levels deep
        (at most k), and accepted ``accepted`` levels."""
        if k:
            self.idle = 0
        if depth == 0:
            return
        self._last = None
        trials = accepted + (1 if accepted < depth else 0)
        self.successes = DECAY * self.successes + accepted
        self.trials = DECAY * self.trials + trials
        self.tokens = DECAY * self.tokens + drafted
        self.levels = DECAY * self.levels + depth
