"""The drafter shoot-out: every drafter (its knobs at their defaults) on one prompt and seed, timed against the baseline in the
same run (specviz.bench does the timing), over a sweep of K, plus what the timing alone cannot
show: each drafter's acceptance by position and its tokens per round against the model.

    measured    specviz.bench rows, one per (drafter, K): tokens per forward, acceptance,
                speedup over the baseline (median over interleaved repeats), draft cost c
    model       speedup ~ E[tokens per round] / (K c + v), with E = (1 - a^(K+1)) / (1 - a)
                from the measured acceptance rate a, c the cost of drafting one token and v
                the cost of one verification pass, both relative to one baseline forward pass
"""

from dataclasses import dataclass

from models.checkpoint import Checkpoint
from specviz.bench import bench_settings, run_bench
from specviz.drafters import DRAFTERS
from specviz.engine import Generation, Settings
from specviz.presets import Preset
from specviz.stats import acceptance_by_position, expected_tokens_per_round

SWEEP_KS = (1, 2, 4, 8)


@dataclass
class Shootout:
    rows: list[dict]  # bench rows (specviz.bench.BenchRow fields), one per (drafter, K)
    by_position: dict[str, list[dict]]  # drafter -> acceptance by draft position, at the chosen K
    k: int  # the chosen K (the sidebar's)


def modelled_speedup(row: dict) -> float | None:
    """The speedup the standard model predicts from a row's own acceptance rate and costs."""
    if row["drafter"] == "none" or row["acceptance_rate"] is None or row["verify_cost"] is None:
        return None
    per_round = expected_tokens_per_round(row["acceptance_rate"], row["k"])
    return per_round / (row["k"] * row["draft_cost"] + row["verify_cost"])


def run_shootout(target: Checkpoint, tiny: Checkpoint, prompt: str, settings: Settings, ks=SWEEP_KS,
                 repeats: int = 3, progress=None) -> Shootout:  # fmt: skip
    """``progress(done, total)`` after every generation, over the whole sweep."""
    ks = sorted({*ks, settings.k})
    preset = Preset("shoot-out prompt", "free", prompt, "")
    per_k = len(DRAFTERS) * repeats
    total = per_k * len(ks) + len(DRAFTERS) - 1  # the sweep, then one traced run per drafter but the baseline
    rows = []
    for i, k in enumerate(ks):
        tick = (lambda done, _, base=i * per_k: progress(base + done, total)) if progress else None
        rows += run_bench(target, tiny, [preset], DRAFTERS, [settings.temperature], k, settings.max_new_tokens,
                          repeats, settings.seed, tick)  # fmt: skip
    ids = target.tokenizer.encode(prompt)
    by_position = {}
    for j, d in enumerate(DRAFTERS[1:], 1):  # the baseline drafts nothing
        same = bench_settings(d, settings.temperature, settings.k, settings.max_new_tokens, settings.seed)
        trace = Generation(target, ids, same, tiny.model).run()
        by_position[d] = acceptance_by_position(trace.rounds)
        if progress:
            progress(per_k * len(ks) + j, total)
    return Shootout(rows, by_position, settings.k)
