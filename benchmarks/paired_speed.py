"""Two checkouts of specviz timed against each other, paired and alternating, with their outputs compared.

    .venv/bin/python benchmarks/paired_speed.py --old ../old-checkout [--new .] [--repeats 5] [--tokens 128]

Each checkout runs in a worker process of its own (one torch thread, models loaded once), and the two
take turns on the same generation (drafter, temperature, K or adaptive K, prompt, seed), in an order
shuffled per pair, so a drift of the machine's speed falls on both alike. For every configuration it
prints the median of new/old over the pairs, and checks that both produced the same tokens. Nothing
runs in parallel: one worker computes while the other waits.
"""

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
from pathlib import Path

WORKER = r"""
import hashlib, json, sys, time
import torch
torch.set_num_threads(1)
try:
    from specviz.core.engine import Generation
    from specviz.core.settings import Settings
    from specviz.teaching.presets import preset
except ImportError:  # the layout before the package was grouped
    from specviz.engine import Generation, Settings
    from specviz.presets import preset
from models.checkpoint import load_checkpoint
target, tiny = load_checkpoint("target"), load_checkpoint("tiny")
print("ready", flush=True)
for line in sys.stdin:
    c = json.loads(line)
    s = Settings(drafter=c["drafter"], temperature=c["T"], k=c["k"], k_auto=c["auto"], max_new_tokens=c["n"],
                 seed=c["seed"])
    ids = target.tokenizer.encode(preset(c["prompt"]).text)
    t0 = time.perf_counter()
    tokens = Generation(target, ids, s, tiny.model).run().tokens
    seconds = time.perf_counter() - t0
    print(json.dumps({"s": seconds, "tokens": hashlib.sha256(str(tokens).encode()).hexdigest()}), flush=True)
"""


def worker(tree: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(tree), SPECVIZ_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-c", WORKER], cwd=tree, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    if proc.stdout.readline().strip() != "ready":
        raise SystemExit(f"the worker in {tree} did not start")
    return proc


def ask(proc: subprocess.Popen, config: dict) -> dict:
    proc.stdin.write(json.dumps(config) + "\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old", required=True, type=Path)
    ap.add_argument("--new", default=Path("."), type=Path)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--prompts", default="Dialogue,Quote a passage")
    ap.add_argument("--json", type=Path, help="also write the per-configuration figures here")
    args = ap.parse_args()
    sys.path.insert(0, str(args.new.resolve()))
    try:
        from specviz.drafters import drafter_names
    except ImportError:  # a checkout from before the registry: its name tuple
        from specviz.drafters import DRAFTERS

        def drafter_names():
            return DRAFTERS

    configs = [{"drafter": d, "T": T, "k": 12 if auto else 4, "auto": auto, "n": args.tokens, "seed": 0}
               for d in drafter_names() for T in (0.0, 0.8) for auto in (False, True)
               if not (auto and d == "none")]  # fmt: skip
    old, new = worker(args.old.resolve()), worker(args.new.resolve())
    order = random.Random(0)
    ratios: dict[tuple, list[float]] = {}
    same = True
    for r in range(args.repeats):
        for c in configs:
            for prompt in args.prompts.split(","):
                job = c | {"prompt": prompt}
                pair = [(old, "old"), (new, "new")]
                order.shuffle(pair)
                out = {name: ask(proc, job) for proc, name in pair}
                same &= out["old"]["tokens"] == out["new"]["tokens"]
                key = (c["drafter"], c["T"], c["auto"])
                ratios.setdefault(key, []).append(out["new"]["s"] / out["old"]["s"])
        print(f"repeat {r + 1}/{args.repeats} done", file=sys.stderr)
    for proc in (old, new):
        proc.stdin.close()
        proc.wait()
    rows = [{"drafter": d, "T": T, "adaptive": auto, "new_over_old": statistics.median(v), "pairs": len(v)}
            for (d, T, auto), v in ratios.items()]  # fmt: skip
    print(f"{'drafter':<16}{'T':>5}{'adaptive':>10}{'new/old':>10}")
    for row in rows:
        print(f"{row['drafter']:<16}{row['T']:>5}{row['adaptive']!s:>10}{row['new_over_old']:>10.3f}")
    within = sum(abs(r["new_over_old"] - 1) <= 0.02 for r in rows)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{within} of {len(rows)} configurations within 2%; median of medians "
          f"{statistics.median(r['new_over_old'] for r in rows):.3f}; same tokens everywhere: {same}; "
          f"{platform.processor() or platform.machine()}, load average {load:.2f}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "same_tokens": same, "load_average": load}, indent=1))


if __name__ == "__main__":
    main()
