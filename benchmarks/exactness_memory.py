"""Peak memory of the exactness lab's largest request: the bound the lab promises.

The lab accepts N <= 20,000 runs (specviz.teaching.exactness.MAX_SAMPLES), K <= 16 (the sidebar's
limit), so runs of 17 characters, a prompt of up to 256 - K = 240 characters, and an exact
enumeration of the first 3 characters. This runs that request on the target in a fresh process
and reports the process's peak resident set size (ru_maxrss) after loading the models and at the
end. The bound stated: peak RSS <= 1 GB. Not a test (it takes minutes); run it after changing
the harness, the model's forward or the engine.

Usage: .venv/bin/python benchmarks/exactness_memory.py [--samples 20000] [--drafter trie] [--json]
"""

import argparse
import json
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

BOUND_MB = 1024


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def main() -> None:
    from models.checkpoint import load_checkpoint
    from specviz.core.settings import KNOBS, Settings
    from specviz.teaching.exactness import MAX_SAMPLES, run_exactness, verdict
    from specviz.teaching.presets import preset

    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=MAX_SAMPLES)
    ap.add_argument("--drafter", default="trie", help="trie: the largest drafts (a tree of up to num_draft nodes)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    target, tiny = load_checkpoint("target"), load_checkpoint("tiny")
    loaded = peak_mb()
    k = KNOBS["k"].app_limits()[1]
    text = (preset("Repetitive").text * 10)[-(target.config.block_size - k) :]
    ids = target.tokenizer.encode(text)
    settings = Settings(
        drafter=args.drafter, k=k, temperature=1.0, trie_num_draft=KNOBS["trie_num_draft"].app_limits()[1]
    )
    t0 = time.perf_counter()
    res = run_exactness(target, ids, settings, args.samples, tiny.model, n_tokens=3)
    out = {"samples": args.samples, "k": k, "prompt_chars": len(ids), "new_tokens": res.new_tokens,
           "drafter": args.drafter, "seconds": round(time.perf_counter() - t0, 1), "peak_rss_mb_after_load": round(loaded),
           "peak_rss_mb": round(peak_mb()), "bound_mb": BOUND_MB, "verdict": verdict(res, 0.001)[0]}  # fmt: skip
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{args.samples:,} runs of {res.new_tokens} tokens (K={k}, {args.drafter}), prompt {len(ids)} characters: "
              f"{out['seconds']} s, peak RSS {out['peak_rss_mb']} MB ({out['peak_rss_mb_after_load']} MB after "
              f"loading the models); bound {BOUND_MB} MB; verdict {out['verdict']}")  # fmt: skip
    if out["peak_rss_mb"] > BOUND_MB:
        sys.exit(f"peak RSS {out['peak_rss_mb']} MB is above the bound of {BOUND_MB} MB")


if __name__ == "__main__":
    main()
