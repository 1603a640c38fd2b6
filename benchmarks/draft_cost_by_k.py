"""Draft cost per round against K for the drafters that run a network (specviz.bench.shootout.network_chains:
the tiny draft, the EAGLE heads, the parallel head, and any such drafter registered later), measured by the
bench's own runs (specviz.bench.runner.run_bench: interleaved, medians over repeats) at each K. Not a test:
the machine is shared, so the script prints the figures with the load average and the CPU.

Usage: .venv/bin/python benchmarks/draft_cost_by_k.py [--ks 1,2,4,8] [--tokens 64] [--repeats 1] [--temperature 0]
"""

import argparse
import json
import os

import torch

from models.checkpoint import load_checkpoint
from specviz.adaptive.costs import cpu_name
from specviz.bench.runner import QUICK, run_bench
from specviz.bench.shootout import draft_cost_per_round, network_chains
from specviz.teaching.presets import preset


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--ks", default="1,2,4,8")
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--temperature", type=float, default=0.0)
    args = p.parse_args()
    torch.set_num_threads(1)
    target, tiny = load_checkpoint("target"), load_checkpoint("tiny")
    prompts = [preset(name) for name in QUICK["prompts"]]
    rows = []
    for k in (int(x) for x in args.ks.split(",")):
        rows += run_bench(target, tiny, prompts, list(network_chains()), [args.temperature], k, args.tokens,
                          args.repeats, memory={})  # fmt: skip
    costs = draft_cost_per_round(rows)
    conditions = (f"{len(prompts)} prompts x {args.tokens} characters, T = {args.temperature}, {args.repeats} repeat(s), "
                  f"1 thread, load average {os.getloadavg()[1]:.2f}, {cpu_name()}")  # fmt: skip
    print(conditions)
    for name, by_k in costs.items():
        print(f"{name:>10}  " + "  ".join(f"K={k}: {c:.2f}" for k, c in sorted(by_k.items())))
    print(json.dumps({"conditions": conditions, "draft_cost_per_round": costs}))


if __name__ == "__main__":
    main()
