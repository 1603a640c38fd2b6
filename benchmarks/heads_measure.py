"""The draft heads on the target's own features, measured side by side: every registered chain drafter whose
``needs`` holds "heads" (EAGLE-1, EAGLE-3, MTP; Medusa's tree too in the bench rows) against plain decoding
(specviz.bench.runner: interleaved, median of repeats) over every preset at T = 0 and 0.8, with tau, the
draft cost c per drafted token and the speedup; then acceptance by draft depth on the validation split
(specviz.training.eagle_depth.depth_acceptance: accepted / tried at depth d, a chain's depth d tried only
when 1..d-1 were accepted).

    PYTHONPATH=. python benchmarks/heads_measure.py [--new 128] [--repeats 3] [--k 4] [--out rows.jsonl]
"""

import argparse
import json
import os
import subprocess

import torch

from models.checkpoint import load_checkpoint
from specviz.bench.runner import run_bench
from specviz.drafters import drafter_class, drafter_names
from specviz.training.distill import DEFAULT_CORPUS
from specviz.training.eagle_depth import depth_acceptance, validation_prompts


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--new", type=int, default=128, help="new tokens per prompt")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--k", type=int, default=4)
    p.add_argument("--out", help="also write the bench rows here (JSON lines)")
    args = p.parse_args()
    torch.set_num_threads(1)
    heads = [d for d in drafter_names() if "heads" in drafter_class(d).needs]
    target = load_checkpoint("target")
    rows = run_bench(target, None, drafters=heads, k=args.k, max_new_tokens=args.new, repeats=args.repeats)
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    cpu = next((line.split(":", 1)[1].strip() for line in cpu.splitlines() if line.startswith("Model name")), "?")
    print(f"noisy: shared machine, load average {os.getloadavg()}, {cpu}, 1 thread, K = {args.k}, "
          f"{rows[0]['prompts']} presets x {args.new} tokens, median of {args.repeats} interleaved repeats")  # fmt: skip
    print("| drafter | T | tau | alpha | draft c per token | verify c | speedup | verdict |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r["suite"] == "main":
            c = "-" if r["draft_cost"] is None else f"{r['draft_cost']:.2f}"
            a = "-" if r["acceptance_rate"] is None else f"{r['acceptance_rate']:.2f}"
            v = "-" if r["verify_cost"] is None else f"{r['verify_cost']:.2f}"
            print(f"| {r['drafter']} | {r['temperature']:g} | {r['tokens_per_forward']:.2f} | {a} | {c} | {v} | "
                  f"{r['speedup']:.2f}x | {r['verdict']} |")  # fmt: skip
    if args.out:
        with open(args.out, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    chains = {d: {"drafter": d} for d in heads if not drafter_class(d).tree}
    prompts = validation_prompts(target.tokenizer, DEFAULT_CORPUS, 8)
    for T in (0.0, 0.8):
        depth = depth_acceptance(target, prompts, None, T, args.k, 64, 0, chains)
        print(f"acceptance by depth 1..{args.k} (accepted / tried), T = {T:g}, 8 validation prompts x 64 tokens:")
        for name, m in depth.items():
            rate = " / ".join(f"{x:.2f}" for x in m["rate"])
            print(f"  {name}: {rate}  (tried {m['tried']}, tokens per round {m['tokens_per_round']:.2f})")


if __name__ == "__main__":
    main()
