"""Tau (tokens per target pass) of DFlash head files side by side: each head drives dflash and dflash-tree over
every preset at K = 4 and 8, T = 0 and 0.8, through the engine the app uses (Generation.run). A count, not a
timing: the load on the machine does not change it. At T = 0 every run's output is checked against plain
greedy decoding.

    PYTHONPATH=. python benchmarks/dflash_tau.py models/dflash.safetensors /tmp/new.safetensors [--new 256]
"""

import argparse

import torch

from models.checkpoint import load_checkpoint
from models.dflash import load_dflash
from specviz.bench.timing import bench_settings
from specviz.core.engine import Generation
from specviz.drafters import BASELINE
from specviz.drafters.dflash import _HEADS
from specviz.teaching.presets import PRESETS


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("heads", nargs="+", help="DFlash head files (.safetensors) paired with the target")
    p.add_argument("--new", type=int, default=256, help="new tokens per preset")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    torch.set_num_threads(1)
    target = load_checkpoint("target")
    prompts = [target.tokenizer.encode(preset.text) for preset in PRESETS]

    def run(drafter: str, k: int, temperature: float, prompt: list[int]):
        settings = bench_settings(drafter, temperature, k, args.new, args.seed)
        return Generation(target, prompt, settings, None).run()

    greedy = [run(BASELINE, 4, 0.0, prompt).tokens for prompt in prompts]
    print(f"{len(prompts)} presets x {args.new} tokens, seed {args.seed}; tau = tokens / target passes")
    print("| head | drafter | K | T | tau | greedy equal |")
    print("|---|---|---|---|---|---|")
    for path in args.heads:
        _HEADS[target.model] = load_dflash(target, path)  # what shared_dflash hands both drafters
        for drafter in ("dflash", "dflash-tree"):
            for k in (4, 8):
                for temperature in (0.0, 0.8):
                    traces = [run(drafter, k, temperature, prompt) for prompt in prompts]
                    tau = sum(len(t.tokens) for t in traces) / sum(len(t.rounds) for t in traces)
                    same = all(t.tokens == g for t, g in zip(traces, greedy, strict=True)) if not temperature else "-"
                    print(f"| {path} | {drafter} | {k} | {temperature} | {tau:.3f} | {same} |", flush=True)


if __name__ == "__main__":
    main()
