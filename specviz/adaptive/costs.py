"""v(N): what a round's verify phase costs when the target's pass covers N tokens, over one with N = 1
(sync, forward, softmax), in units of that one-token round. Adaptive K prices every draft with it.

Why a curve per machine? It is the matmul kernels' shape, and that is the CPU's. On the machine the
reference curve was measured on, going from 1 row to 2 costs most (the matmuls leave the
matrix-vector kernel), and past 8 rows they take a second block of rows: so ``REFERENCE`` is two lines,
N = 2..8 and N >= 9, the second bending up as attention over the new rows grows (a wide lookahead window
reaches such N). Another CPU's passes can cost far more, and not monotonically; priced with the reference
curve there, adaptive K drafted where it could not pay, and priced with that CPU's measured curve it did
not. In rounds a pass also costs more than back to back, so a curve measured back to back prices long
drafts somewhat below their cost there.

A tree's pass also builds its mask: ``TREE_MASK`` over a chain's, on every curve.

A curve is an input of a run, like its seed: adaptive K reads it, never the clock, so a run is the same
for the same seed and curve. ``REFERENCE`` is the default (tests, the model card's sample); the bench, the
CLI's ``--k auto`` and the app use their machine's (``measure``: ~3 s), measured once per CPU and version
of the code and kept on disk (``kept_curve``: .cache/costs/, specviz/core/diskcache.py). A kept curve's
source says when it was measured; delete the folder to measure again (a curve measured while the
machine was busy prices passes as they cost then).

Measurements on each CPU, and what was tried: docs/notes/costs.md.
"""

import bisect
import json
import math
import platform
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import torch

from models.artifacts import read_manifest
from specviz.core.diskcache import cache_dir, digest, files_digest, kept_or_made
from specviz.core.sampling import probs_from_logits
from specviz.kernels import native
from specviz.kernels.cached_model import CachedModel

N_MAX = 256  # the longest pass a round can send: a round never spans a window jump (block_size 256)
VERIFY_SMALL = (1.11, 0.0375)  # reference: (v(2), per row) for N = 2..8
VERIFY_LARGE = (1.51, 0.035, 6e-5)  # reference: (v(9), per row, per row squared) for N >= 9
TREE_MASK = 0.04
# The passes ``measure`` times: every N a chain or a small tree sends, then a few wider ones (lookahead's
# window, big trees) between which the curve is a straight line.
MEASURED = (*range(1, 33), 40, 48, 64, 96, 128)

CACHE = cache_dir("costs")
_PKG = Path(__file__).resolve().parents[1]
# The code a measured pass runs, and how it is timed: a change to any of it measures again.
PASS_CODE = (*sorted((_PKG / "kernels").glob("*.cpp")), *sorted((_PKG / "kernels").glob("*.h")),
             *(_PKG / "kernels" / f for f in ("cached_model.py", "linear.py", "attention.py", "native.py")),
             _PKG / "core" / "sampling.py", Path(__file__).resolve())  # fmt: skip


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
    one-token pass took about four times as long on the one as on the other (docs/notes/costs.md): figures
    from the two cannot be compared, and a bench row or cost curve must say which ran it. ValueError: no
    model name."""
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


def curve_key(ckpt) -> dict:
    """Everything bar the machine's load that decides what ``measure`` finds for a checkpoint's model:
    the CPU, torch and its threads, what runs the lean pass (native.backend()), that pass's code, and
    the weights (their recorded sha256, else the file's size and time)."""
    path = Path(ckpt.path)
    weights = read_manifest(path.parent).get(path.name)
    if weights is None:
        try:
            stat = path.stat()
            weights = f"{path.resolve()} {stat.st_size} {stat.st_mtime_ns}"
        except OSError:
            weights = str(path)
    return {"cpu": cpu_name(), "torch": torch.__version__, "threads": torch.get_num_threads(),
            "kernels": native.backend(), "code": files_digest(PASS_CODE), "weights": weights,
            "dtype": str(next(ckpt.model.parameters()).dtype)}  # fmt: skip


def read_curve(path: Path, key: dict) -> CostCurve | None:
    """The curve kept at ``path`` for ``key``, its source saying when it was measured; None when there
    is none, or the file is unreadable, damaged or for another key (then it is measured again)."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        verify = tuple(float(v) for v in record["verify"])
        when = datetime.fromisoformat(record["measured_at"]).astimezone()
        source = record["source"]
        if record["key"] != key or not isinstance(source, str) or len(verify) != N_MAX or verify[0] != 1.0:
            return None
        if not all(math.isfinite(v) and v >= 1.0 for v in verify):
            return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return CostCurve(verify, f"{source}, on {when:%Y-%m-%d at %H:%M %Z} (kept from then)")


def _kept_path(key: dict, cache: Path | None) -> Path:
    return (CACHE if cache is None else cache) / f"{digest(key)}.json"


def kept(ckpt, cache: Path | None = None) -> CostCurve | None:
    """The curve measured on this machine before for the checkpoint's model, kept in ``cache``
    (.cache/costs) under the same key (curve_key), or None."""
    key = curve_key(ckpt)
    return read_curve(_kept_path(key, cache), key)


def kept_curve(ckpt, measure_now: Callable[[], CostCurve], cache: Path | None = None) -> CostCurve:
    """This machine's curve for the checkpoint's model: the kept one (``kept``), else ``measure_now()``, kept
    for the next start (one process measures at a time: diskcache.kept_or_made)."""
    key = curve_key(ckpt)
    path = _kept_path(key, cache)

    def encode(curve: CostCurve) -> bytes:
        record = {"key": key, "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
                  "source": curve.source, "verify": list(curve.verify)}  # fmt: skip
        return json.dumps(record, indent=1).encode()

    return kept_or_made(path, lambda: read_curve(path, key), measure_now, encode)


@dataclass(frozen=True)
class Drafting:
    """What drafting costs on this CPU, in lone plain rounds (specviz/adaptive/load.py, ``measure_drafting``)."""

    per_token: float  # each drafted token
    per_call: float  # each drafting round, whatever K (the draft call and its bookkeeping)
    # A batch drafts its sequences in a row, and all but the first find the drafter's code and tables warm:
    next_token: float | None = None  # each drafted token of a draft right after another sequence's (None: per_token)
    next_call: float | None = None  # each such draft's call (None: per_call)

    def in_batch(self, batch: int) -> "Drafting":
        """A sequence's drafting in a batch of ``batch``, on average: one draft of the batch's is the first after the
        pass, the others each follow another's."""
        if batch <= 1 or self.next_token is None or self.next_call is None:
            return self
        f = (batch - 1) / batch
        return Drafting((1 - f) * self.per_token + f * self.next_token, (1 - f) * self.per_call + f * self.next_call)
