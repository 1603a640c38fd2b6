"""v(N): what a round's verify phase costs when the target's pass covers N tokens, over one with N = 1
(sync, forward, softmax), in units of that one-token round. Adaptive K prices every draft with it.

Why a curve per machine? It is the matmul kernels' shape, and that is the CPU's. On the machine the
reference curve was measured on (1 thread, 2026-11-24, over the distilled chain's rounds at K = 1..16,
6 presets, T = 0): 1.11 at N = 2, 1.19 at 4, 1.22 at 5, 1.30 at 7, 1.34 at 8, then a step: 1.51 at 9,
1.58 at 12, 1.72 at 16, 1.80 at 17. Going from 1 row to 2 costs most: the matmuls leave the
matrix-vector kernel. Past 8 rows they take a second block of rows (a warm addmm of (N, 256) by
(256, 768): 17 us at 8 rows, 24 us at 9). So two lines, N = 2..8 and N >= 9, the second bending up as
attention over the new rows grows (one pass in a loop, 1 thread: 2.36 at 33, 3.43 at 64, 6.22 at 128,
12.3 at 236; a wide lookahead window reaches such N). On an AMD EPYC (Zen 3, AVX2, 2.45 GHz, 1 thread,
2026-11-24) the same passes cost far more, and not monotonically: 1.34-1.39 at N = 2, 1.60 at 3, 1.52 at
4, 1.73 at 8, 1.88 at 9, 2.09 at 16 (``measure``, twice). Priced with the reference curve there, adaptive
K drafted where it could not pay: at T = 0.8 (11 presets, 256 tokens, 2 repeats) Medusa ran at 0.86x the
baseline, NASD 0.91x, prompt lookup 0.92x, the trie and suffix decoding 0.94x; priced with the measured
curve, 0.97-1.01x.
With the lean pass's products on specviz/kernels/linear.py's kernel (each weight read once for all the rows, not
once per row or two), the same EPYC measured v(2) 1.05-1.12, v(5) 1.31-1.42, v(9) 1.73-1.87 and v(17)
2.25-2.64 (``measure``, five times, 2026-11-24 evening), over a one-token pass that got 13-18% faster
itself. The kernel's second version (f8daeac) took 0.91-0.95 of that pass's time at 2-17 rows; past a few
rows a pass grows by ~0.1 ms a row (the products ~60 us, attention, GELU and the rest ~40 us) over a
one-token pass of ~1.3-1.6 ms, of which most does not grow with the rows. With attention on
specviz/kernels/attention.py's kernel too (a781795) a one-token pass lost ~30% of its time and a 9-token pass
~17%, so the curve rose: v(2) 1.12, v(5) 1.39, v(9) 1.98, v(17) 2.66 (the bench's ``measure``,
2026-11-25). In rounds a pass costs more than back to back: a 9-token pass of the distilled chain 2.21
of the baseline's one-token passes (~150 us a row there, ~100 in a loop), so this curve prices long
drafts below their cost there. Tiles of 4 rows or more prefetching their weights (linear.cpp) and
attention's lane sums by horizontal adds (attention.cpp) then brought it down to v(2) 1.01, v(5) 1.29,
v(9) 1.64, v(17) 2.55 (the bench's ``measure``, 2026-11-25, 02:12; 1.04, 1.30, 1.68 and 2.29 at 02:49), a one-token pass about the same.

A tree's pass also builds its mask: +0.03 to 0.05 over a chain's at N = 3..13 (distilled tree, 2..24
nodes, reference machine): ``TREE_MASK``, on every curve. On a Zen 5 with AVX-512 (2026-11-26) a binary
tree's pass measured +0.11-0.17 over a chain's at N = 3-7, +0.2 at 9 and +0.35 at 17, back to back; a
curve that priced trees by that excess was tried and not kept: paired with the baseline (11 presets x 3,
T = 0.8, adaptive K) the distilled tree fell 1.059x -> 0.974x, suffix decoding stayed at 0.94x and the
trie moved within noise (0.92x -> 0.95x).

A curve is an input of a run, like its seed: adaptive K reads it, never the clock, so a run is the same
for the same seed and curve. ``REFERENCE`` is the default (tests, the model card's sample); the bench, the
CLI's ``--k auto`` and the app measure their machine's once (``measure``: ~3 s).
"""

import bisect
import platform
import random
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from specviz.core.sampling import probs_from_logits
from specviz.kernels.cached_model import CachedModel

N_MAX = 256  # the longest pass a round can send: a round never spans a window jump (block_size 256)
VERIFY_SMALL = (1.11, 0.0375)  # reference: (v(2), per row) for N = 2..8
VERIFY_LARGE = (1.51, 0.035, 6e-5)  # reference: (v(9), per row, per row squared) for N >= 9
TREE_MASK = 0.04
# The passes ``measure`` times: every N a chain or a small tree sends, then a few wider ones (lookahead's
# window, big trees) between which the curve is a straight line.
MEASURED = (*range(1, 33), 40, 48, 64, 96, 128)


@dataclass(frozen=True, eq=False)  # eq=False: hashed by identity, cheaply, as adaptive K's cache key
class CostCurve:
    verify: tuple[float, ...]  # v(N) for N = 1 .. N_MAX; v(1) = 1
    source: str  # where the figures come from: "reference machine" or "measured on <cpu>, <n> thread(s)"

    def v(self, n_tokens: int, tree: bool = False) -> float:
        """The cost of a round whose pass covers ``n_tokens`` (a tree's: plus its mask)."""
        if n_tokens <= 1:
            return 1.0
        return self.verify[min(n_tokens, len(self.verify)) - 1] + (TREE_MASK if tree else 0.0)

    def summary(self) -> str:
        """One line for a bench row or a summary: the source and v at a few N."""
        return f"{self.source}: " + ", ".join(f"v({n}) {self.v(n):.2f}" for n in (2, 5, 9, 17))


def _reference(n: int) -> float:
    if n <= 1:
        return 1.0
    if n <= 8:
        base, slope = VERIFY_SMALL
        return base + slope * (n - 2)
    base, slope, bend = VERIFY_LARGE
    return base + slope * (n - 9) + bend * (n - 9) ** 2


REFERENCE = CostCurve(tuple(_reference(n) for n in range(1, N_MAX + 1)), "reference machine")


def interpolate(points: dict[int, float], n_max: int = N_MAX) -> tuple[float, ...]:
    """v for N = 1 .. n_max from v at two or more N, N = 1 among them: straight lines between them, and
    past the last the line through the last two where it rises, else the last figure. (A dip between the
    last two sizes is what was measured, but extended it would price a wide pass below nothing: with two
    repeats on a busy machine, v(96) > v(128) once ran the line to -43 at N = 256.)"""
    xs = sorted(points)
    out = []
    for n in range(1, n_max + 1):
        i = min(max(bisect.bisect_left(xs, n), 1), len(xs) - 1)
        a, b = xs[i - 1], xs[i]
        slope = (points[b] - points[a]) / (b - a)
        if n > b:
            slope = max(slope, 0.0)
            a = b
        out.append(points[n] if n in points else points[a] + slope * (n - a))
    return tuple(out)


def cpu_name() -> str:
    """The CPU, as describe_cpu reads /proc/cpuinfo (Linux), else what platform knows."""
    try:
        return describe_cpu(Path("/proc/cpuinfo").read_text())
    except (OSError, ValueError):
        return platform.processor() or platform.machine() or "unknown CPU"


def describe_cpu(cpuinfo: str) -> str:
    """The first processor's model name, with its family, model and widest vectors where cpuinfo says them:
    "AMD EPYC (family 26, model 2, AVX-512)". A VM may name a Zen 3 and a Zen 5 alike ("AMD EPYC"), and a
    one-token pass took 1.1-1.4 ms on the one against ~0.3 ms on the other (2026-11-26): figures from the two
    cannot be compared, and a bench row or cost curve must say which ran it. ValueError: no model name."""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        if not line.strip():
            if fields:
                break  # the first processor's block only
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    name = fields.get("model name") or fields.get("Model") or fields.get("Hardware")
    if not name:
        raise ValueError("no model name in cpuinfo")
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    vectors = next((v for f, v in (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("asimd", "NEON"), ("sse2", "SSE2"))
                    if f in flags), None)  # fmt: skip
    about = [f"family {fields['cpu family']}" if "cpu family" in fields else None,
             f"model {fields['model']}" if fields.get("model", "").isdigit() else None, vectors]  # fmt: skip
    about = [a for a in about if a]
    return f"{name} ({', '.join(about)})" if about else name


def measure(model, repeats: int = 8, sizes=MEASURED, seed: int = 0, progress=None) -> CostCurve:
    """This machine's curve for ``model`` (a GPT), with the threads torch has now. Each N is timed
    between two one-token passes, and v(N) is the median over ``repeats`` of its time over theirs:
    the machine's speed drifts (on a shared 2-core VM a one-token pass took 1.3 ms, then 2.0 ms
    minutes later), the ratio much less. The sizes run in a shuffled order each repeat, each pass
    after half a window of cache, as a round's does in the middle of a window (a pass writes its keys
    after the cache as scratch, which the next pass overwrites). ``progress(done, total)`` after
    every repeat."""
    lm = CachedModel(model)
    P = model.config.block_size // 2
    sizes = [n for n in sizes if n <= P]
    context = [i % model.config.vocab_size for i in range(2 * P)]

    def once(n: int) -> float:
        t0 = time.perf_counter()
        probs_from_logits(lm.forward(context[P : P + n], list(range(P, P + n))), 1.0)  # (n, V)
        return time.perf_counter() - t0

    with torch.inference_mode():
        lm.sync(context[: P + 1])  # the cache holds context[:P]
        for n in sizes:  # warm every shape once
            once(n)
        ratios = {n: [] for n in sizes if n > 1}
        order = random.Random(seed)
        for rep in range(repeats):
            for n in order.sample(list(ratios), len(ratios)):
                before, t, after = once(1), once(n), once(1)
                ratios[n].append(2 * t / (before + after))
            if progress:
                progress(rep + 1, repeats)
    points = {1: 1.0} | {n: max(1.0, statistics.median(r)) for n, r in ratios.items()}
    threads = torch.get_num_threads()
    return CostCurve(interpolate(points, N_MAX), f"measured on {cpu_name()}, {threads} thread{'s' * (threads > 1)}")
