"""A real model (SmolLM2 by default) on this machine: load time, our plain decoding and prompt lookup against
transformers' greedy generate and its prompt_lookup_num_tokens, the float32 divergence from transformers'
greedy output, and the verify-cost curve v(N) (one pass over N new rows after a cache). Not a test: these
machines are shared and noisy, so it reports medians with the load average and leaves judging to the reader.

Usage: .venv/bin/python benchmarks/llm_speed.py [--model smollm2] [--tokens 32] [--repeats 3] [--dtype float32] [--json]
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

from specviz.core.engine import Generation  # noqa: E402 (after the path)
from specviz.core.settings import Settings  # noqa: E402
from specviz.llm.load import DTYPES, load_model  # noqa: E402

PROMPTS = {  # code, a quotation to continue, a list, free text
    "code": "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n\ndef fib",
    "quote": "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\nTo be, or not to be,",
    "list": "A list of fruits:\n1. apple\n2. banana\n3. cherry\n4.",
    "fact": "The capital of France is",
    "story": "Once upon a time, in a small village,",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3, help="interleaved repeats; medians reported")
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--dtype", choices=tuple(DTYPES), default="float32")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    ck = load_model(args.model, DTYPES[args.dtype])
    out = {"model": args.model, "dtype": args.dtype, "threads": args.threads, "load_s": time.perf_counter() - t0,
           "load_average_start": os.getloadavg(), "prompts": {}}  # fmt: skip
    N, model = args.tokens, ck.model

    def ours(p, drafter):
        g = Generation(ck, p, Settings(drafter=drafter, temperature=0.0, max_new_tokens=N, k=args.k))
        t = time.perf_counter()
        trace = g.run()
        return trace.tokens, N / (time.perf_counter() - t)

    def theirs(p, **kw):
        with torch.no_grad():
            t = time.perf_counter()
            o = model.generate(torch.tensor([p]), do_sample=False, max_new_tokens=N, min_new_tokens=N, pad_token_id=0,
                               **kw)  # fmt: skip
            return o[0, len(p) :].tolist(), N / (time.perf_counter() - t)

    runs = {"ours plain": lambda p: ours(p, "none"), "transformers generate": theirs,
            "ours prompt-lookup": lambda p: ours(p, "prompt-lookup"),
            "transformers prompt lookup": lambda p: theirs(p, prompt_lookup_num_tokens=args.k)}  # fmt: skip
    for name, text in PROMPTS.items():
        p = ck.tokenizer.encode(text)
        rates, tokens = {k: [] for k in runs}, {}
        for _ in range(args.repeats):
            for k, f in runs.items():  # interleaved: load changes hit every method alike
                tokens[k], r = f(p)
                rates[k].append(r)
        a, b = tokens["ours plain"], tokens["transformers generate"]
        row = {k: statistics.median(v) for k, v in rates.items()}
        row["first_departure"] = next((i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y), None)
        row["lookup_equals_plain"] = tokens["ours prompt-lookup"] == a
        out["prompts"][name] = row
        if not args.json:
            print(f"{name:6} " + ", ".join(f"{k} {v:.1f} tok/s" for k, v in row.items() if isinstance(v, float))
                  + f"; departs from transformers at {row['first_departure']}", flush=True)  # fmt: skip
    out["divergence"] = sum(r["first_departure"] is not None for r in out["prompts"].values()) / len(PROMPTS)
    tgt = ck.target_model()
    tgt.sync(ck.tokenizer.encode(PROMPTS["quote"]) + [0])
    costs = {}
    for n in (1, 5, 9, 17):
        ts = []
        for _ in range(5):
            t = time.perf_counter()
            tgt.forward(list(range(100, 100 + n)), list(range(tgt.length, tgt.length + n)))
            ts.append(time.perf_counter() - t)
        costs[n] = statistics.median(ts)
    out["pass_ms"] = {n: c * 1000 for n, c in costs.items()}
    out["v(N)"] = {n: c / costs[1] for n, c in costs.items()}
    out["load_average_end"] = os.getloadavg()
    if args.json:
        print(json.dumps(out))
        return
    print(
        f"load {out['load_s']:.1f} s; float32 departures from transformers' greedy: {out['divergence']:.0%} of prompts"
    )
    print(
        "pass over N rows: "
        + ", ".join(f"N={n} {ms:.0f} ms (v={out['v(N)'][n]:.2f})" for n, ms in out["pass_ms"].items())
    )
    print(f"load average {out['load_average_start']} -> {out['load_average_end']}")


if __name__ == "__main__":
    main()
