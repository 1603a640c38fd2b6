"""One timed generation of the bench: the settings it runs a drafter with, its measurements
(``Run``), and the quiet heap every timed run starts on.

Python's garbage collector: before each timed run, the garbage the runs before it left is collected
and every object alive is frozen (``gc.freeze``), so a full collection that falls in a run scans only
that run's own objects. Otherwise it scans the whole process (the corpus indexes, the tables, every
drafter's state), a sizeable share of a run charged to whichever run it fell in (docs/notes/bench.md).
The bench unfreezes the heap when it ends (specviz/bench/runner.py).
"""

import gc
import time
from dataclasses import dataclass

from specviz.adaptive.costs import REFERENCE
from specviz.core.engine import Generation, Settings


@dataclass
class Run:
    """One generation's measurements."""

    tokens: list[int]
    seconds: float
    forwards: int
    drafted: int = 0
    tried: int = 0
    accepted: int = 0
    draft_s: float = 0.0
    verify_s: float = 0.0
    accept_s: float = 0.0
    expected: dict | None = None  # rule -> expected accepted tokens summed over the rounds (block runs)


def bench_settings(drafter: str, temperature: float, k: int, n: int, seed: int, auto: bool = False,
                   verification: str = Settings().verification, tree_shape: str = Settings().tree_shape) -> Settings:  # fmt: skip
    """How the benchmark runs a drafter: the given K (or adaptive K up to it), temperature, length,
    seed, verification rule and tree shape, every other knob at its default."""
    return Settings(drafter=drafter, k=k, k_auto=auto, temperature=temperature, max_new_tokens=n, seed=seed,
                    verification=verification, tree_shape=tree_shape)  # fmt: skip


def expected_totals(rounds) -> dict | None:
    """Rule -> expected accepted tokens summed over the rounds, when the verifier recorded them
    (block verification does, for its own drafts, under both rules); None otherwise."""
    notes = [r.verify_notes["expected_accepted"] for r in rounds if "expected_accepted" in r.verify_notes]
    if not notes:
        return None
    return {rule: sum(n[rule] for n in notes) for rule in notes[0]}


def quiet_heap() -> None:
    """Before a timed run: collect the runs before it and freeze what is left (module docstring)."""
    gc.collect()
    gc.freeze()


def specviz_run(target, tiny, prompt, config, temperature, n, seed, costs=REFERENCE) -> Run:
    drafter, k, auto, verification, shape = config
    settings = bench_settings(drafter, temperature, k, n, seed, auto, verification, shape)
    quiet_heap()
    t0 = time.perf_counter()
    trace = Generation(target, prompt, settings, tiny.model if tiny is not None else None, costs=costs).run()
    seconds = time.perf_counter() - t0
    s = trace.summary()
    return Run(trace.tokens, seconds, s["target_forwards"], s["drafted"], s["tried"], s["accepted"],
               sum(r.draft_s for r in trace.rounds), sum(r.verify_s for r in trace.rounds),
               sum(r.accept_s for r in trace.rounds), expected_totals(trace.rounds))  # fmt: skip
