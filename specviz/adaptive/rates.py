"""Adaptive K's model: what a round of depth K is expected to emit and to cost, and the K that
maximises tokens per unit of time (``best_k``). The rule that feeds it past rounds:
specviz/adaptive/policy.py.

Expected tokens. Model each depth level of a draft as accepted with probability alpha, one level
after another (Leviathan et al.'s i.i.d. model): a round of depth K emits

    E(K) = 1 + alpha + ... + alpha^K = (1 - alpha^(K+1)) / (1 - alpha)

tokens (the accepted levels plus the correction or bonus).

Cost, in target forward passes: drafting K levels costs K * l + K * n * c (l per level, for a drafter
that runs something once a level whatever its width, Medusa's heads; n drafted tokens per level,
measured from past rounds, and until a draft is seen the drafter's Drafter.nodes_per_level; K * n at
most a budgeted tree's budget, Drafter.max_nodes; c the drafter's cost per token), and verifying
N = 1 + K * n + e tokens costs v(N), what one round whose target pass covers N tokens costs on this
machine (specviz/adaptive/costs.py), a little more when the pass needs a mask built (a tree, or extras) (e: the
tokens a drafter adds to every drafting round's pass besides its draft, Drafter.verify_extra:
lookahead's window). K = 0 is plain
decoding, E = 1 at cost 1. Drafting must promise ``MIN_GAIN`` times the tokens per unit of
time of K = 0, since a round with a draft has costs the model leaves out (the accept/reject
walk over more positions).

Measurements and what was tried: docs/notes/adaptive.md.
"""

import math
from functools import lru_cache

from specviz.adaptive.costs import REFERENCE, CostCurve
from specviz.core.choice import MIN_GAIN


def round_cost(k: int, per_level: float, draft_cost: float, extra: int = 0, curve: CostCurve = REFERENCE,
               max_nodes: int = 0, level_cost: float = 0.0) -> float:  # fmt: skip
    # A drafter's cost per call (Drafter.call_cost) is left out on purpose: charged to every drafting
    # round, it measured worse (docs/notes/adaptive.md). It only spaces out the idle rounds' shadows.
    # Drafted tokens: more than k for a tree (a window's pass has a mask too), and never more than a
    # budgeted tree's budget (max_nodes; 0: none), whatever its width at the depth it was seen at.
    n = k * per_level if not max_nodes else min(k * per_level, max_nodes)
    drafting = k * level_cost + n * draft_cost
    return 1.0 if k == 0 else drafting + curve.v(1 + round(n) + extra, tree=round(n) > k or extra > 0)


@lru_cache(maxsize=256)
def round_costs(per_level: float, draft_cost: float, k_max: int, extra: int = 0, curve: CostCurve = REFERENCE,
                max_nodes: int = 0, level_cost: float = 0.0) -> tuple[float, ...]:  # fmt: skip
    """round_cost for K = 0 .. k_max. Cached: a chain's are the same every round, and working them out
    again cost adaptive K ~10 us of each round it re-chose in (after each draft or shadow)."""
    return tuple(round_cost(k, per_level, draft_cost, extra, curve, max_nodes, level_cost) for k in range(k_max + 1))


@lru_cache(maxsize=256)
def least_costs(per_level: float, draft_cost: float, k_max: int, extra: int = 0, curve: CostCurve = REFERENCE,
                max_nodes: int = 0, level_cost: float = 0.0) -> tuple[float, ...]:  # fmt: skip
    """The least round_cost from each K to k_max: what bounds every deeper K's rate (best_k)."""
    costs = round_costs(per_level, draft_cost, k_max, extra, curve, max_nodes, level_cost)
    return tuple(min(costs[k:]) for k in range(k_max + 1))


def rates(alpha: float, per_level: float, draft_cost: float, k_max: int, extra: int = 0,
          curve: CostCurve = REFERENCE, max_nodes: int = 0, level_cost: float = 0.0) -> list[float]:  # fmt: skip
    """Expected tokens per unit of cost for K = 0, 1, ..., k_max (K = 0: exactly 1). Every K is
    weighed: v need not rise smoothly (the reference machine's steps up at 9 rows; another's dips at
    4), so E(K)/cost(K) can fall and rise again."""
    costs = round_costs(per_level, draft_cost, k_max, extra, curve, max_nodes, level_cost)
    out, e, power = [1.0], 1.0, 1.0
    for k in range(1, k_max + 1):
        power *= alpha
        e += power
        out.append(e / costs[k])
    return out


def best_k(alpha: float, per_level: float, draft_cost: float, k_max: int, extra: int = 0,
           curve: CostCurve = REFERENCE, max_nodes: int = 0, level_cost: float = 0.0) -> int:  # fmt: skip
    """argmax of rates() (ties: the smaller K), or 0 if that rate falls short of MIN_GAIN. It runs every round
    that follows a draft or a shadow, so it stops as soon as no deeper K can win: E(K) stays below
    1 / (1 - alpha), and no K from here on costs less than least_costs says."""
    costs = round_costs(per_level, draft_cost, k_max, extra, curve, max_nodes, level_cost)
    least = least_costs(per_level, draft_cost, k_max, extra, curve, max_nodes, level_cost)
    bound = math.inf if alpha >= 1.0 else 1.0 / (1.0 - alpha)
    best, best_rate, e, power = 0, 1.0, 1.0, 1.0
    for k in range(1, k_max + 1):
        if bound / least[k] <= best_rate:
            break
        power *= alpha
        e += power
        if e / costs[k] > best_rate:
            best, best_rate = k, e / costs[k]
    return best if best_rate >= MIN_GAIN else 0
