"""Adaptive K under load: the prices of a round when B sequences share the target's pass (specviz/core/batch.py).

Alone, a round that verifies N tokens costs v(N) one-token rounds (specviz/adaptive/costs.py). In a batch
every sequence sends its rows to one pass, and a sequence's round costs its share of that pass PLUS what
the round costs the CPU for that sequence alone: its attention (one call per sequence a layer), its softmax,
its accept/reject walk, its trim and the engine's bookkeeping. Batching shares the first and not the second,
so as B grows the second is most of a round, and it grows with the rows too. So the price is measured:
``measure_load`` (specviz/bench/batch.py) times whole batched rounds of the engine on this CPU, B sequences
sending N rows each (a ``LoadCurve``, per CPU and version of the code, kept on disk as the verify-cost curve
is: ``kept_load``). With m(B, N) the cost of such a round,

    v_B(N) = m(B, N) / m(B, 1)        (in the batch's own plain rounds)

Drafting is each sequence's own CPU, which batching does not share, so it is priced against the sequence's
shrinking round, times B m(1, 1) / m(B, 1). And it is priced at what drafting measures on this CPU
(``measure_drafting``: per drafted token and per drafting round, whatever K), not at the drafter's declared
cost, which leaves out the call's own overhead (charged alone, that measured worse: docs/notes/adaptive.md;
in a batch, a round's fixed costs weigh several times more). A batch drafts its sequences one after another
before its pass, and a draft right after another's costs less than the first after the pass (the drafter's
code and tables are warm): both are measured, and a sequence of a batch of B is priced at the first's figure
once in B drafts (``Drafting.in_batch``). The per-round part rides on v_B(N) for N >= 2.
An idle sequence's shadow drafts (specviz/adaptive/policy.py) are spaced at that measured cost too.

Prices read the measured curve as ``physical`` fits it: a shared machine's noise can make a row look free or
a bigger batch look cheaper per sequence, and adaptive K's choices would follow the noise.

A roofline (specviz/bench/roofline.py) can stand in for m: it gives only the pass's shape, so it scales the
lone curve, v_B(N) = v(N) [t(B N, B) / t(B, B)] / [t(N, 1) / t(1, 1)], and it leaves out the CPU beside the
pass (why adaptive K kept drafting where it did not pay: docs/notes/batch.md).

In a batch of ``LOADED_FROM`` or more, a sequence's acceptance estimate remembers more of its past: its
successes and trials decay by ``DECAY_LOADED`` a round, not the lone DECAY (specviz/adaptive/policy.py). There
the priced gains are thin (a drafted row costs a sequence's share of the pass), so the price sits near the
acceptance a drafter typically has. An estimate of about 10 rounds wanders across that price by chance: a
sequence then drafts in the rounds where its estimate ran high, which accept less than it said (a winner's
curse), and idles where drafting would have paid. An estimate over about 100 rounds sits near the drafter's
true acceptance, and a sequence drafts, or not, round after round. (A wider margin on the gain, 1.15, was the
remedy before: it cut the drafts that paid with those that did not; docs/notes/batch.md, session 15.) Below
B = 8 the prices are far from the typical acceptance, and the lone estimate's quick following of the text
pays.

At B = 1 every price is the lone sequence's, so a lone run (and a batch of one) chooses what it chose
before. Adaptive K then chooses K per round as always, down to K = 0 where no draft pays the price
(specviz/adaptive/policy.py). The prices depend only on B and the measured figures, never on the round's
draws: K is still fixed before the draft, and the run stays exact. Measurements: docs/notes/batch.md.
"""

import bisect
import json
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import NamedTuple

from specviz.adaptive.costs import N_MAX, CostCurve, Drafting, curve_key
from specviz.adaptive.policy import DECAY
from specviz.core.diskcache import cache_dir, digest, files_digest, kept_or_made

BATCHES = (1, 2, 4, 8, 16, 32, 64)  # batch sizes measure_load times
ROWS = (1, 2, 3, 4, 5, 7, 9, 13)  # rows a sequence sends: K = 0 .. 12 chains, between which v is a line
DECAY_LOADED = 0.99  # the past's weight per round in a batch of B >= LOADED_FROM: about 100 rounds (the docstring)
LOADED_FROM = 8  # ... below it, DECAY as alone
CONTEXT = 100  # prompt tokens a measured sequence starts from (a repeat adds ~50-80: about the bench's ~150)
CACHE = cache_dir("load")
_PKG = Path(__file__).resolve().parents[1]
# The code a measured round runs beyond the pass (the pass's own code is in curve_key): a change re-measures.
ROUND_CODE = tuple(_PKG / f for f in ("core/batch.py", "core/engine.py", "core/record.py", "kernels/batched.py",
                                      "verifiers/tokenwise.py", "verifiers/base.py", "adaptive/load.py", "bench/batch.py"))  # fmt: skip


def _between(xs: list, x: float) -> tuple[int, float]:
    """The index i of the segment xs[i-1]..xs[i] that holds x (clamped to the ends) and x's fraction along it."""
    i = min(max(bisect.bisect_left(xs, x), 1), len(xs) - 1)
    a, b = xs[i - 1], xs[i]
    return i, (x - a) / (b - a)


@dataclass(frozen=True, eq=False)  # eq=False: hashed by identity (LoadCosts' cache key)
class LoadCurve:
    """A batched round's measured cost on this CPU, in units of a lone plain round (B = 1, N = 1)."""

    share: dict[int, float]  # B -> m(B, 1) / (B m(1, 1)): a sequence's plain round in a batch of B, over alone
    ratio: dict[int, dict[int, float]]  # B -> N -> m(B, N) / m(B, 1): N rows a sequence, over one
    source: str  # "measured on <cpu>, <n> thread(s)" (and when, for a kept one)

    def per_seq(self, batch: float, rows: float) -> float:
        """m(B, N) / (B m(1, 1)) at B = ``batch``, N = ``rows`` a sequence: a sequence's round. Between measured
        B a line in log2 B, beyond them the nearest; between measured N a line, past the last the line through
        the last two where it rises (as costs.interpolate)."""
        bs = sorted(self.share)
        if len(bs) == 1 or batch <= bs[0] or batch >= bs[-1]:
            b = bs[0] if batch <= bs[0] else bs[-1]
            return self.share[b] * self._rows(b, rows)
        i, f = _between([math.log2(b) for b in bs], math.log2(batch))
        lo, hi = bs[i - 1], bs[i]
        return (1 - f) * self.share[lo] * self._rows(lo, rows) + f * self.share[hi] * self._rows(hi, rows)

    def _rows(self, batch: int, rows: float) -> float:
        r = self.ratio[batch]
        ns = sorted(r)
        if rows <= ns[0]:
            return r[ns[0]]
        i, f = _between(ns, rows)
        slope = r[ns[i]] - r[ns[i - 1]]
        if rows > ns[-1] and slope < 0:  # a dip between the last two: the last figure, never a line down
            return r[ns[-1]]
        return r[ns[i - 1]] + f * slope

    def seconds(self, rows: int, seqs: int) -> float:
        """A round of ``seqs`` sequences sending ``rows`` rows in all, in lone plain rounds (LoadCosts' input)."""
        return seqs * self.per_seq(seqs, rows / seqs)

    def summary(self) -> str:
        """One line: the source, a sequence's plain round at a few B, and 5 rows against 1 there."""
        at = [b for b in (2, 16, 64) if b in self.share]
        return f"{self.source}: " + ", ".join(
            f"B={b} plain {self.share[b]:.2f}, 5 rows {self.per_seq(b, 5) / self.per_seq(b, 1):.2f}x" for b in at
        )


def _isotonic(ys: list[float]) -> list[float]:
    """The non-decreasing sequence nearest ``ys`` in least squares (pool adjacent violators, equal weights)."""
    blocks: list[list[float]] = []  # [mean, count]
    for y in ys:
        blocks.append([y, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            (m2, n2), (m1, n1) = blocks.pop(), blocks.pop()
            blocks.append([(m1 * n1 + m2 * n2) / (n1 + n2), n1 + n2])
    return [m for m, n in blocks for _ in range(n)]


def physical(curve: LoadCurve) -> LoadCurve:
    """A measured curve held to what a batched round must do, fitted in least squares: a sequence's plain round
    costs no more in a bigger batch (share non-increasing in B), and one more row a sequence costs at least
    nothing, and no less in a bigger batch (each step of m(B, N) / m(B, 1) between measured N is >= 0 and
    non-decreasing in B). A shared machine's noise breaks both (a dip at one B, a row that seems free), and
    adaptive K's choices would follow the noise (a deeper draft at one B for nothing but a dip there). Slopes are
    fitted where every B has the same N; a curve that does not is left as measured."""
    bs = sorted(curve.share)
    share = dict(zip(bs, [-s for s in _isotonic([-curve.share[b] for b in bs])], strict=True))
    ns = sorted(curve.ratio[bs[0]])
    if any(sorted(curve.ratio[b]) != ns for b in bs):
        return LoadCurve(share, curve.ratio, curve.source)
    slopes = {b: [max(0.0, (curve.ratio[b][n2] - curve.ratio[b][n1]) / (n2 - n1)) for n1, n2 in pairwise(ns)]
              for b in bs}  # fmt: skip
    for i in range(len(ns) - 1):
        for b, s in zip(bs, _isotonic([slopes[b][i] for b in bs]), strict=True):
            slopes[b][i] = s
    ratio = {}
    for b in bs:
        r = {ns[0]: curve.ratio[b][ns[0]]}
        for (n1, n2), s in zip(pairwise(ns), slopes[b], strict=True):
            r[n2] = r[n1] + s * (n2 - n1)
        ratio[b] = r
    return LoadCurve(share, ratio, curve.source)


class Price(NamedTuple):
    """How a sequence's rounds are priced in a batch (AdaptiveK.price_for's arguments)."""

    curve: CostCurve  # v_B(N): a round sending N rows, over a plain one, in this batch
    scale: float  # a drafted token's price over its price alone
    drafting: Drafting | None  # drafting as measured on this CPU, or None: the drafter's declared costs
    decay: float  # the weight of the acceptance estimate's past per round


class LoadCosts:
    """Per batch size, the curve and the drafting scale adaptive K prices rounds with. ``seconds``: a LoadCurve
    (whole rounds measured here: v_B(N) is its own m(B, N) / m(B, 1)), or ``seconds(rows, seqs)``, a pass's time
    over ``rows`` rows of ``seqs`` sequences (a Roofline's at the bench's context length: only the pass's shape,
    the CPU beside it left out), which scales the lone curve. ``drafting``: drafter name -> its measured
    Drafting (a drafter without one is priced at its declared costs)."""

    def __init__(
        self, base: CostCurve, seconds: "Callable[[int, int], float] | LoadCurve", drafting: dict | None = None
    ):
        self.measured = physical(seconds) if isinstance(seconds, LoadCurve) else None
        self.base, self.seconds = base, self.measured.seconds if self.measured else seconds
        self.drafting = dict(drafting or {})
        self._at: dict[tuple, tuple[CostCurve, float]] = {}
        self._drafts: dict[tuple[Drafting, int], Drafting] = {}

    def at(self, B: int, drafting: Drafting | None = None) -> tuple[CostCurve, float]:
        """(v_B, the drafting's scale) for a batch of B live sequences; the base curve itself at B = 1. With
        ``drafting``, v_B(N) for N >= 2 also carries its per-call cost, scaled."""
        if B <= 1:
            return self.base, 1.0
        key = (B, drafting)
        if key not in self._at:
            t = self.seconds
            scale = B * t(1, 1) / t(B, B)
            call = drafting.per_call * scale if drafting is not None else 0.0
            if isinstance(self.measured, LoadCurve):  # the batched round itself, measured: its own ratios
                verify = tuple(t(B * n, B) / t(B, B) for n in range(1, N_MAX + 1))
            else:  # a pass's shape only (the roofline): the lone curve, scaled by how the pass grows at B
                lone = [t(n, 1) / t(1, 1) for n in range(1, N_MAX + 1)]
                verify = tuple(self.base.v(n) * (t(B * n, B) / t(B, B)) / lone[n - 1] for n in range(1, N_MAX + 1))
            verify = tuple(max(1.0, v) + (call if n > 1 else 0.0) for n, v in enumerate(verify, 1))
            curve = CostCurve(verify, f"{self.base.source}, priced for a batch of {B}")
            self._at[key] = (curve, scale)
        return self._at[key]

    def describe(self, drafter: str) -> str:
        """One line for a bench row: the lone curve, the batch's (when measured), the drafter's measured drafting."""
        parts = [self.base.summary()]
        if isinstance(self.measured, LoadCurve):
            parts.append(f"under load {self.measured.summary()}")
        if (d := self.drafting.get(drafter)) is not None:
            parts.append(f"drafting here {d.per_token:.3f} a token, {d.per_call:.3f} a round")
            if d.next_token is not None:
                parts.append(f"after another sequence's {d.next_token:.3f} and {d.next_call:.3f}")
        parts.append(
            f"in a batch of {LOADED_FROM} or more, acceptance is estimated over about {memory(DECAY_LOADED)} rounds"
        )
        return "; ".join(parts)

    def price(self, B: int, drafter: str) -> Price:
        """A sequence of ``drafter`` in a batch of B: from B = 2 on its measured drafting, from LOADED_FROM on the
        longer memory, the lone prices at B = 1."""
        d = self.drafting.get(drafter) if B > 1 else None
        if d is not None:  # one object per (drafting, B): adaptive K re-prices only when it changes
            d = self._drafts.setdefault((d, B), d.in_batch(B))
        curve, scale = self.at(B, d)
        return Price(curve, scale, d, DECAY_LOADED if B >= LOADED_FROM else DECAY)


def memory(decay: float) -> int:
    """About how many past rounds an estimate that decays by ``decay`` a round remembers: 1 / (1 - decay)."""
    return round(1 / (1 - decay))


def clock() -> Callable[[], float]:
    """What the measurements time with: on one torch thread, the thread's own CPU time (a shared machine's
    other jobs preempt it: wall time then measures them, a round of ~1 ms against the scheduler's slices of
    several), else wall time (several threads' work is not the calling thread's)."""
    import torch

    return time.thread_time if torch.get_num_threads() == 1 else time.perf_counter


def measure_drafting(drafting: Callable[[int], None], plain: Callable[[], None], ks=(1, 2, 4, 8), repeats: int = 7,
                     now: Callable[[], float] | None = None, others: list[Callable[[int], None]] = ()) -> Drafting:  # fmt: skip
    """What drafting costs here: ``drafting(k)`` (one draft of k tokens from a fixed context) against
    ``plain()`` (one lone plain round), each draft between two plain rounds; the median ratio at each k, and
    the least-squares line through them: per token (its slope) and per call (its intercept, at least 0).
    ``others``: other sequences' drafts; with them, ``drafting`` and then each of them in a row is timed too
    (between two plain rounds, as a batch drafts its sequences before its pass), and the line through what each
    of them added is ``next_token`` and ``next_call``. ``now``: the clock (``clock()`` unless given)."""
    row = lambda k: [d(k) for d in (drafting, *others)]  # noqa: E731
    for k in ks:  # warm: tables, heads and caches loaded before the clock
        row(k)
    plain()
    ratios = {k: [] for k in ks}
    added = {k: [] for k in ks}  # what each of ``others`` added, in a row

    now = now or clock()

    def timed(fn, *args) -> float:
        t0 = now()
        fn(*args)
        return now() - t0

    def ratio(fn, k) -> float:
        before, t, after = timed(plain), timed(fn, k), timed(plain)
        return 2 * t / (before + after)

    for _ in range(repeats):
        for k in ks:
            ratios[k].append(ratio(drafting, k))
            if others:
                added[k].append((ratio(row, k) - ratios[k][-1]) / len(others))
    per_token, per_call = _line(ks, [statistics.median(ratios[k]) for k in ks])
    if not others:
        return Drafting(per_token, per_call)
    return Drafting(per_token, per_call, *_line(ks, [statistics.median(added[k]) for k in ks]))


def _line(xs, ys) -> tuple[float, float]:
    """The least-squares line through (xs, ys), its slope and its intercept each at least 0."""
    slope = max(0.0, statistics.linear_regression(xs, ys).slope)
    return slope, max(0.0, statistics.mean(ys) - slope * statistics.mean(xs))


def load_key(ckpt) -> dict:
    """What decides measure_load's figures bar the machine's load: the verify-cost curve's key (the CPU, torch,
    threads, kernels, the pass's code, the weights) and the code a round runs beyond the pass."""
    return curve_key(ckpt) | {"round": files_digest(ROUND_CODE), "batches": list(BATCHES), "rows": list(ROWS)}


def read_load(path: Path, key: dict) -> LoadCurve | None:
    """The curve kept at ``path`` for ``key``, or None (none, unreadable, damaged, or another key's)."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        if record["key"] != key or not isinstance(record["source"], str):
            return None
        when = datetime.fromisoformat(record["measured_at"]).astimezone()
        share = {int(b): float(s) for b, s in record["share"].items()}
        ratio = {int(b): {int(n): float(r) for n, r in rs.items()} for b, rs in record["ratio"].items()}
        figures = [*share.values(), *(r for rs in ratio.values() for r in rs.values())]
        if set(share) != set(ratio) or 1 not in share or not all(math.isfinite(v) and v > 0 for v in figures):
            return None
        if any(1 not in rs or len(rs) < 2 for rs in ratio.values()):
            return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return LoadCurve(share, ratio, f"{record['source']}, on {when:%Y-%m-%d at %H:%M %Z} (kept from then)")


def kept(ckpt, cache: Path | None = None) -> LoadCurve | None:
    """The LoadCurve measured here before for the checkpoint's model (kept_load), or None: nothing measured."""
    key = load_key(ckpt)
    return read_load((CACHE if cache is None else cache) / f"{digest(key)}.json", key)


def kept_load(ckpt, measure_now: Callable[[], LoadCurve], cache: Path | None = None) -> LoadCurve:
    """This machine's LoadCurve for the checkpoint's model: the kept one, else ``measure_now()``, kept for the
    next run (one process measures at a time: diskcache.kept_or_made)."""
    key = load_key(ckpt)
    path = (CACHE if cache is None else cache) / f"{digest(key)}.json"

    def encode(curve: LoadCurve) -> bytes:
        record = {"key": key, "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
                  "source": curve.source, "share": curve.share, "ratio": curve.ratio}  # fmt: skip
        return json.dumps(record, indent=1).encode()

    return kept_or_made(path, lambda: read_load(path, key), measure_now, encode)
