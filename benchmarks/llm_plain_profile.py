"""Where a plain decoding's time goes on a real model (SmolLM2 by default), ours against transformers' greedy
generate, pass by pass: the first pass (the prompt's prefill) and the one-token passes after it, split into the
mask our target builds, the model call, the language-model head inside it, and the rest (the cache crop, the
logits' dtype, the engine's round). Three decoders, interleaved per repeat:
    ours        HFTarget as it is (no mask for a causal chain, only the rows the engine reads reach the head)
    ours-mask   the same with the explicit 4D mask on every pass and logits for every row (the earlier pass)
    generate    transformers' greedy generate
It also records what the decoder layers were given as an attention mask (None: SDPA's mask-free path) and how
many rows reached the head. Not a test: the machine is shared and noisy; figures go to docs/notes/llm.md.

Usage: .venv/bin/python benchmarks/llm_plain_profile.py [--model smollm2] [--tokens 24] [--repeats 3] [--json F]
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

from specviz.bench.llm import PROMPTS  # noqa: E402 (after the path)
from specviz.core.engine import Generation  # noqa: E402
from specviz.core.settings import Settings  # noqa: E402
from specviz.llm.load import load_model  # noqa: E402


class Probe:
    """Forward hooks timing the model call and its head, and recording the layers' mask and the head's rows."""

    def __init__(self, model):
        self.calls: list[dict] = []
        self.t = {}
        layer0 = (model.base_model.layers if hasattr(model.base_model, "layers") else model.base_model.h)[0]
        head = model.get_output_embeddings()
        self.hooks = [
            model.register_forward_pre_hook(lambda *_: self.t.__setitem__("model", time.perf_counter())),
            model.register_forward_hook(self.model_done),
            layer0.register_forward_pre_hook(self.layer, with_kwargs=True),
            head.register_forward_pre_hook(lambda *_: self.t.__setitem__("head", time.perf_counter())),
            head.register_forward_hook(self.head_done),
        ]
        self.call = {}

    def layer(self, module, args, kwargs):
        mask = kwargs.get("attention_mask")
        self.call["rows"] = args[0].shape[1] if args else kwargs["hidden_states"].shape[1]
        self.call["mask"] = "none" if mask is None else f"4D {str(mask.dtype).removeprefix('torch.')}"

    def head_done(self, module, args, out):
        self.call["head_ms"] = (time.perf_counter() - self.t["head"]) * 1000
        self.call["head_rows"] = out.shape[-2]

    def model_done(self, module, args, out):
        self.call["model_ms"] = (time.perf_counter() - self.t["model"]) * 1000
        self.calls.append(self.call)
        self.call = {}

    def remove(self):
        for h in self.hooks:
            h.remove()


def ours(ck, prompt, n, explicit: bool):
    """Our plain decoding; explicit: every pass with the 4D mask and every row's logits (the earlier pass)."""
    g = Generation(ck, prompt, Settings(drafter="none", temperature=0.0, max_new_tokens=n))
    t = g.target
    mask_ms, fwd_ms, run = [], [], t.forward
    build = t.mask

    def timed_mask(*a):
        t0 = time.perf_counter()
        out = build(*a)
        mask_ms.append((time.perf_counter() - t0) * 1000)
        return out

    def timed_forward(tokens, positions, tree_mask=None, logits=True, skip=0):
        if explicit:
            T = len(tokens)
            tree_mask = torch.ones(T, T, dtype=torch.bool).tril() if tree_mask is None else tree_mask
            skip = 0
        t0 = time.perf_counter()
        out = run(tokens, positions, tree_mask, logits, skip)
        fwd_ms.append((time.perf_counter() - t0) * 1000)
        return out

    t.mask, t.forward = timed_mask, timed_forward
    t0 = time.perf_counter()
    trace = g.run()
    total = time.perf_counter() - t0
    masks = mask_ms if explicit else [0.0] * len(fwd_ms)
    return trace.tokens, total, fwd_ms, masks


def theirs(model, prompt, n):
    ids = torch.tensor([prompt])
    t0 = time.perf_counter()
    with torch.no_grad():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, min_new_tokens=n,
                             do_sample=False, use_cache=True)  # fmt: skip
    return out[0, len(prompt) :].tolist(), time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--tokens", type=int, default=24)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", help="write the per-pass figures to this file")
    args = ap.parse_args()
    torch.set_num_threads(1)
    ck = load_model(args.model, torch.float32)
    ids = {name: ck.tokenizer.encode(text) for name, text in PROMPTS.items()}
    stats = {m: {"first": [], "step": [], "total": []} for m in ("ours", "ours-mask", "generate")}
    seen, tokens = {}, {}
    load = [os.getloadavg()[0]]
    for r in range(args.repeats):
        for name, prompt in ids.items():
            for mode in ("ours", "ours-mask", "generate")[:: 1 if r % 2 == 0 else -1]:  # alternate the order
                probe = Probe(ck.model)
                try:
                    if mode == "generate":
                        out, total = theirs(ck.model, prompt, args.tokens)
                        fwd, masks = [c["model_ms"] for c in probe.calls], [0.0] * len(probe.calls)
                    else:
                        out, total, fwd, masks = ours(ck, prompt, args.tokens, mode == "ours-mask")
                finally:
                    probe.remove()
                tokens.setdefault(name, {})[mode] = out
                for i, (c, f, m) in enumerate(zip(probe.calls, fwd, masks, strict=True)):
                    part = {"pass_ms": f, "mask_ms": m, "model_ms": c["model_ms"], "head_ms": c.get("head_ms", 0.0),
                            "rows": c["rows"], "head_rows": c.get("head_rows")}  # fmt: skip
                    part["rest_ms"] = f - m - c["model_ms"]  # ours: crop, dtype, the call's own glue
                    stats[mode]["first" if i == 0 else "step"].append(part)
                    seen.setdefault((mode, "first" if i == 0 else "step"), set()).add(c["mask"])
                stats[mode]["total"].append(total)
        load.append(os.getloadavg()[0])
    same = {name: len({tuple(v) for v in t.values()}) == 1 for name, t in tokens.items()}
    report = {"tokens": args.tokens, "repeats": args.repeats, "load_average": load, "same_tokens": same, "modes": {}}
    for mode, s in stats.items():
        row = {"total_s_median": statistics.median(s["total"])}
        for kind in ("first", "step"):
            for key in ("mask_ms", "model_ms", "head_ms", "rest_ms"):
                row[f"{kind}_{key}"] = statistics.median(p[key] for p in s[kind])
            row[f"{kind}_head_rows"] = sorted({p["head_rows"] for p in s[kind]})
            row[f"{kind}_layer_mask"] = sorted(str(m) for m in seen[(mode, kind)])
        report["modes"][mode] = row
    print(json.dumps(report, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(report) + "\n")


if __name__ == "__main__":
    main()
