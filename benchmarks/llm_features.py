"""Feasibility of a draft for a real model (issue 42: a distilled draft or Medusa/EAGLE heads for SmolLM2, only
if training takes <= 30 minutes on 2 cores): the target's feature-extraction throughput, the tokens per second of
one forward over training windows (the hidden states a head trains on and the logits a distilled draft learns
from), at 1 and 2 threads, and what 30 minutes of it buys. Not a test; docs/notes/llm.md keeps the figures.

Usage: .venv/bin/python benchmarks/llm_features.py [--model smollm2] [--window 256] [--batch 4] [--repeats 3]
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path[:0] = [str(Path(__file__).resolve().parents[1])]

from specviz.llm.load import load_model  # noqa: E402 (after the path)
from specviz.training.distill import DEFAULT_CORPUS  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--window", type=int, default=256)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    ck = load_model(args.model, torch.float32)
    ids = ck.tokenizer.encode(Path(DEFAULT_CORPUS).read_text()[:200_000])
    W, B = args.window, args.batch
    out = {"model": args.model, "window": W, "batch": B, "corpus_tokens_per_char": len(ids) / 200_000}
    for threads in (1, 2):
        torch.set_num_threads(threads)
        rates, load = [], os.getloadavg()
        for r in range(args.repeats + 1):  # the first is a warm-up
            x = torch.tensor([ids[(r * B + b) * W : (r * B + b + 1) * W] for b in range(B)])
            t0 = time.perf_counter()
            with torch.inference_mode():
                h = ck.model.base_model(input_ids=x).last_hidden_state  # (B, W, C): a head's features
                ck.model.get_output_embeddings()(h)  # (B, W, V): a distilled draft's targets
            if r:
                rates.append(B * W / (time.perf_counter() - t0))
        tps = statistics.median(rates)
        out[f"threads_{threads}"] = {"tokens_per_s": tps, "tokens_in_30_min": tps * 1800, "load_average": load}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
