"""Lookahead decoding, measured: tau and speedup against the baseline (specviz.bench.runner, interleaved,
median of repeats) over every preset at T = 0 and 0.8, the pool's hit rate by the source of the
accepted n-gram (the prompt, or the Jacobi window), and v(N): the verify phase's cost per round
with the window riding in it, against a plain one-token pass.

    PYTHONPATH=. python benchmarks/lookahead_measure.py [--new 256] [--repeats 3] [--k 4]
"""

import argparse
import statistics
import time

import torch

from models.checkpoint import load_checkpoint
from specviz.bench.runner import run_bench
from specviz.core.engine import Generation
from specviz.core.settings import Settings
from specviz.kernels.cached_model import CachedModel
from specviz.teaching.presets import PRESETS


def hit_rate(target, k: int, n: int, T: float) -> dict:
    """Over every preset: rounds with candidates, rounds that accepted one, by its source."""
    out = {"rounds": 0, "with_candidates": 0, "accepted_rounds": 0, "accepted_tokens": 0, "prompt": 0, "jacobi": 0}
    for j, p in enumerate(PRESETS):
        trace = Generation(target, target.tokenizer.encode(p.text),
                           Settings(drafter="lookahead", k=k, temperature=T, max_new_tokens=n, seed=j)).run()  # fmt: skip
        for r in trace.rounds:
            cands = r.draft_notes.get("candidates", [])
            out["rounds"] += 1
            out["with_candidates"] += bool(cands)
            if r.accepted_path:
                out["accepted_rounds"] += 1
                out["accepted_tokens"] += len(r.accepted_path)
                source = cands[r.draft_notes["node_candidate"][r.accepted_path[0]]]["source"]
                out[source] += 1
    return out


@torch.no_grad()
def verify_costs(target, sizes: list[int], reps: int = 400) -> dict[int, float]:
    """Median time of one forward over n new tokens after a 128-token cache, over n = 1; the sizes
    interleaved, so that the machine's load falls on all of them alike."""
    cache = CachedModel(target.model)
    ctx = target.tokenizer.encode(PRESETS[1].text * 4)[:129]
    cache.sync(ctx)
    P = cache.length
    times = {n: [] for n in sizes}
    for _ in range(reps):
        for n in sizes:
            mask = torch.ones(n, n, dtype=torch.bool).tril()
            t0 = time.perf_counter()
            cache.forward(ctx[-n:], list(range(P, P + n)), None if n == 1 else mask)
            times[n].append(time.perf_counter() - t0)
    one = statistics.median(times[1])
    return {n: statistics.median(ts) / one for n, ts in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--new", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--k", type=int, default=4)
    args = ap.parse_args()
    torch.set_num_threads(1)
    target = load_checkpoint("target")
    s = Settings()
    extras = (s.lookahead_ngram - 1) * s.lookahead_window - 1
    print(f"W={s.lookahead_window} N={s.lookahead_ngram} G={s.lookahead_candidates}: {extras} extra rows per pass")
    sizes = [1, 2, 5, 9, 1 + extras, 5 + extras, 9 + extras, 33]
    print("v(N), one forward of N tokens over a one-token forward:",
          {n: round(v, 2) for n, v in verify_costs(target, sizes).items()})  # fmt: skip
    for T in (0.0, 0.8):
        print(f"hit rate T={T}:", hit_rate(target, args.k, args.new, T))
    rows = run_bench(target, None, drafters=["lookahead", "prompt-lookup"], k=args.k, max_new_tokens=args.new,
                     repeats=args.repeats)  # fmt: skip
    for r in rows:
        print(f"{r['drafter']:14s} T={r['temperature']} K={r['k']} tau={r['tokens_per_forward']:.3f} "
              f"speedup={r['speedup']:.3f} verify_cost={r['verify_cost']:.2f} same={r['same_as_baseline']} "
              f"load={r['load_average']}")  # fmt: skip


if __name__ == "__main__":
    main()
