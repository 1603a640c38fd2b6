"""The exactness lab on a real model (SmolLM2 by default), at T = 1 for K + 1 tokens: its verdicts for a
deterministic chain (prompt lookup), a deterministic tree (suffix), and the biased rules (NASD's own, FLy) on the
same drafts. The prompt is the candidate whose first prompt-lookup draft the target finds least certain (its
probability nearest 0.5), where a biased rule moves most mass. Not a test: it prints JSON lines with the load
average; docs/notes/llm.md keeps the figures.

Usage: .venv/bin/python benchmarks/llm_lab.py [--model smollm2] [--samples 400] [--k 2] [--threads 1]
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

sys.path[:0] = [str(Path(__file__).resolve().parents[1])]

from specviz.core.engine import Generation  # noqa: E402 (after the path)
from specviz.core.sampling import probs_from_logits  # noqa: E402
from specviz.core.settings import Settings  # noqa: E402
from specviz.llm.load import load_model  # noqa: E402
from specviz.teaching.exactness import run_exactness, verdict  # noqa: E402

CANDIDATES = {  # prompts that repeat themselves, so that prompt lookup drafts
    "list": "Shopping list:\n1. apples\n2. bread\n3. milk\n4. eggs\n\nShopping list again:\n1. apples\n2.",
    "quote": "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n"
    "To be, or not to be, that is",
    "code": "for i in range(10):\n    print(i)\nfor j in range(10):\n    print(",
}
CASES = [("prompt-lookup", "lossless"), ("suffix", "lossless"), ("prompt-lookup", "nasd-seed"),
         ("prompt-lookup", "fly")]  # fmt: skip


def first_draft_p(ck, prompt: list[int], k: int) -> float:
    """The target's probability (T = 1) of prompt lookup's first drafted token after the prompt; -1: no draft."""
    gen = Generation(ck, prompt, Settings(drafter="prompt-lookup", k=k, temperature=1.0, max_new_tokens=k + 1))
    gen.step()
    rnd = gen.trace.rounds[0]
    if not rnd.draft_tokens:
        return -1.0
    p = probs_from_logits(ck.target_model().next_logits(prompt)[None], 1.0)[0]
    return float(p[rnd.draft_tokens[0]])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--samples", type=int, default=400)
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    ck = load_model(args.model, torch.float32)
    ps = {name: first_draft_p(ck, ck.tokenizer.encode(text), args.k) for name, text in CANDIDATES.items()}
    name = min((n for n in ps if ps[n] >= 0), key=lambda n: abs(ps[n] - 0.5))
    print(json.dumps({"first_draft_p": ps, "prompt": name, "load_average": os.getloadavg()}), flush=True)
    prompt = ck.tokenizer.encode(CANDIDATES[name])
    for drafter, rule in CASES:
        t0 = time.perf_counter()
        s = Settings(drafter=drafter, k=args.k, temperature=1.0, verification=rule, seed=1, fly_window=2)
        res = run_exactness(ck, prompt, s, args.samples)
        kind, sentence = verdict(res, 0.001)
        print(json.dumps({"drafter": drafter, "verification": rule, "k": args.k, "samples": args.samples,
                          "verdict": kind, "p_value": res.p_value, "first_p": res.first.p_value,
                          "first_dof": res.first.dof, "pit_p": res.joint.p_value, "cells": len(res.cells),
                          "rest": float(res.expected[-1]), "tv": res.tv_distance, "seconds": time.perf_counter() - t0,
                          "load_average": os.getloadavg(), "sentence": sentence}), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
