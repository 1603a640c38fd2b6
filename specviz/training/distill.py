"""Distil the target into an n-gram table: ``python -m specviz distill``.

The n-gram drafters guess what Shakespeare wrote; the verifier accepts what *the target* would
write. So run the target once over the training split and, for every context of up to L
characters, record what the target does after it:

    mode    the target's most frequent argmax after that context  (the T = 0 draft)
    agree   how often the target's argmax was that mode           (the T = 0 draft's odds)
    q       the average of its next-character distributions        (the T > 0 draft)

Every training position t is predicted once, from at least half a block of left context
(windows of block_size, stride block_size / 2, keeping each window's second half), exactly as the
target sees text when it generates. The average distribution is shipped sparse: its top_k
characters and their probabilities; the remaining mass is spread evenly over the other
characters when the table is loaded (models/distilled.py), so the drafter samples from, and the
verifier checks against, one and the same q.

Contexts seen fewer than ``min_count`` times are dropped to keep the file small; the drafter
backs off to the longest context it has (length L down to 0, the unigram). The build runs in
chunks saved to a resume folder, so an interrupted build continues where it stopped.
"""

import argparse
import hashlib
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from safetensors.torch import save_file
from tqdm import tqdm

from models.artifacts import record_artifact, sha256
from models.checkpoint import atomic_write, checkpoint_path, load_checkpoint
from models.distilled import DEFAULT_PATH, FORMAT, MAX_CONTEXT
from specviz.core.outputs import writable_file, writable_folder
from specviz.training.train import split

DEFAULT_CORPUS = Path(__file__).resolve().parents[3] / "shared" / "data" / "tinyshakespeare.txt"


@dataclass
class DistillConfig:
    max_context: int = 8  # L: longest context recorded
    top_k: int = 5  # characters of the average distribution kept per context
    min_count: int = 2  # contexts seen fewer times are dropped
    batch_windows: int = 32  # windows per target forward pass
    chunk_windows: int = 256  # windows per resume chunk
    limit_chars: int = 0  # build from the first N training characters only (0 = all): tests, quick looks


def window_starts(n: int, block: int) -> list[int]:
    """Windows [s, s + block) at stride block/2; together their recorded halves cover 0..n-1 once."""
    half = block // 2
    return list(range(0, max(n - half, 1), half))


def recorded(s: int, n: int, block: int) -> tuple[int, int]:
    """The positions [lo, hi) that window s records: all of the first window, the second half of the rest."""
    return (0 if s == 0 else s + block // 2), min(s + block, n)


@torch.no_grad()
def target_outputs(model, ids: torch.Tensor, starts: list[int], batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The target's next-character distribution (float16) and argmax (uint8) at every recorded
    position of these windows, in position order. -> (n, V), (n,)"""
    block = model.config.block_size
    probs, argmax = [], []
    for i in range(0, len(starts), batch):
        group = starts[i : i + batch]
        # A short last window runs alone: every window in a batch must have the same length.
        for part in [group] if all(s + block <= len(ids) for s in group) else [[s] for s in group]:
            x = torch.stack([ids[s : s + block] for s in part])  # (B, T)
            logits, _ = model(x, torch.arange(x.size(1)))  # (B, T, V)
            p = logits.float().softmax(-1)
            for b, s in enumerate(part):
                lo, hi = recorded(s, len(ids), block)
                probs.append(p[b, lo - s : hi - s].half())
                argmax.append(logits[b, lo - s : hi - s].argmax(-1).to(torch.uint8))
    return torch.cat(probs), torch.cat(argmax)


def aggregate(ids: torch.Tensor, probs: torch.Tensor, argmax: torch.Tensor, cfg: DistillConfig, V: int) -> dict:
    """Group positions by their last 0..L characters and keep the contexts seen min_count times."""
    n = len(ids)
    t = torch.arange(n)
    keys, pos = [torch.zeros(n, dtype=torch.long)], [t]  # length 0: the unigram context
    key = torch.zeros(n, dtype=torch.long)
    for L in range(1, cfg.max_context + 1):
        # context_key's base-(V+1) code, built up one character further back per length
        key = key + (ids.roll(L - 1) + 1) * (V + 1) ** (L - 1)
        keys.append(key[L - 1 :].clone())
        pos.append(t[L - 1 :])
    keys, pos = torch.cat(keys), torch.cat(pos)
    uniq, inverse, counts = torch.unique(keys, return_inverse=True, return_counts=True)
    keep = counts >= cfg.min_count
    row = torch.full((len(uniq),), -1, dtype=torch.long)
    row[keep] = torch.arange(int(keep.sum()))
    r = row[inverse]
    sel = r >= 0
    r, p_pos = r[sel], pos[sel]
    U = int(keep.sum())
    sums = torch.zeros(U, V, dtype=torch.float64).index_add_(0, r, probs[p_pos].double())
    mean = sums / counts[keep].unsqueeze(1)
    votes = torch.bincount(r * V + argmax[p_pos].long(), minlength=U * V).view(U, V)
    mode = votes.argmax(-1)  # ties go to the lowest id
    # The mode's share of the context's argmaxes, in 255ths: how often a T = 0 draft from this row would have
    # matched the target on the training text (adaptive K weighs a draft's depth by it, specviz/adaptive/stopper.py).
    agree = (votes.gather(1, mode.unsqueeze(1)).squeeze(1).double() * 255 / counts[keep]).round()
    top_p, top_t = mean.topk(cfg.top_k, dim=-1)
    return {
        "keys": uniq[keep].contiguous(),  # sorted
        "counts": counts[keep].to(torch.int32),
        "mode": mode.to(torch.uint8),
        "agree": agree.to(torch.uint8),
        "top_tokens": top_t.to(torch.uint8).contiguous(),
        "top_probs": top_p.to(torch.float16).contiguous(),
    }


def build(target_name: str, corpus: Path, out: Path, cfg: DistillConfig, resume_dir: Path, command: str) -> dict:
    t_start = time.perf_counter()
    target = load_checkpoint(target_name)
    text = corpus.read_text(encoding="utf-8")
    ids = torch.tensor(target.tokenizer.encode(text), dtype=torch.long)
    train_ids, _ = split(ids)
    if cfg.limit_chars:
        train_ids = train_ids[: cfg.limit_chars]
    block, V = target.config.block_size, target.config.vocab_size
    starts = window_starts(len(train_ids), block)
    chunks = [starts[i : i + cfg.chunk_windows] for i in range(0, len(starts), cfg.chunk_windows)]
    target_sha = sha256(target.path)
    # One resume folder per (target, corpus slice, chunking): a chunk is never reused for other inputs.
    tag = hashlib.sha256(f"{target_sha} {len(train_ids)} {cfg.chunk_windows} {block}".encode()).hexdigest()[:16]
    resume = resume_dir / f"distill-{tag}"
    resume.mkdir(parents=True, exist_ok=True)
    probs, argmax = [], []
    with tqdm(total=len(starts), desc="distilling", unit="window", disable=None, file=sys.stderr) as bar:
        for i, chunk in enumerate(chunks):
            path = resume / f"chunk-{i:05d}.pt"
            if path.is_file():
                saved = torch.load(path, weights_only=True)  # tensors only: runs no code
            else:
                p, a = target_outputs(target.model, train_ids, chunk, cfg.batch_windows)
                saved = {"probs": p, "argmax": a}
                atomic_write(path, lambda tmp, s=saved: torch.save(s, tmp))
            probs.append(saved["probs"])
            argmax.append(saved["argmax"])
            bar.update(len(chunk))
    probs, argmax = torch.cat(probs), torch.cat(argmax)
    assert len(probs) == len(train_ids), "windows must record every training position exactly once"
    table = aggregate(train_ids, probs, argmax, cfg, V)
    # The header holds only what the table is a function of, so the same input gives the same
    # bytes; how this build ran (time, command, threads) goes to a sidecar beside it.
    meta = {
        "format": FORMAT,
        "config": asdict(cfg),
        "vocab": target.tokenizer.chars,
        "target_sha256": target_sha,
        "target_file": checkpoint_path(target_name).name,
        "corpus_sha256": hashlib.sha256(corpus.read_bytes()).hexdigest(),
        "train_chars": len(train_ids),
        "contexts": len(table["keys"]),
        "torch": torch.__version__,
    }
    # One metadata key: safetensors keeps the header's keys in a hash map, so two could be written in
    # either order, and the same table would not always be the same bytes.
    atomic_write(out, lambda tmp: save_file(table, tmp, metadata={"meta": json.dumps(meta)}))
    record_artifact(out)  # a shipped table's line in models/SHA256SUMS follows the new file
    build_info = {
        "command": command,
        "build_seconds": round(time.perf_counter() - t_start, 1),
        "threads": torch.get_num_threads(),
        "sha256": sha256(out),
        "bytes": out.stat().st_size,
    }
    atomic_write(build_path(out), lambda tmp: Path(tmp).write_text(json.dumps(build_info, indent=1) + "\n"))
    for f in resume.glob("chunk-*.pt"):
        f.unlink()
    resume.rmdir()
    return meta | build_info


def build_path(table: Path) -> Path:
    """The sidecar that records how a table was built: models/distilled.build.json."""
    return table.with_name(table.name.removesuffix(".safetensors") + ".build.json")


def add_args(p: argparse.ArgumentParser) -> None:
    d = DistillConfig()
    p.add_argument("--data", default=str(DEFAULT_CORPUS), help="the training corpus (Tiny Shakespeare)")
    p.add_argument("--target", default="target", help="checkpoint to distil")
    p.add_argument("--out", default=str(DEFAULT_PATH), help="the table to write (.safetensors)")
    p.add_argument("--max-context", type=int, default=d.max_context, help=f"L, the longest context (1..{MAX_CONTEXT})")
    p.add_argument("--top-k", type=int, default=d.top_k, help="characters kept per context (1..64)")
    p.add_argument("--min-count", type=int, default=d.min_count, help="drop contexts seen fewer times (1 or more)")
    p.add_argument("--limit-chars", type=int, default=0, help="use only the first N training characters (0 = all)")
    p.add_argument(
        "--resume-dir", default=str(Path.home() / ".cache" / "specviz"), help="where finished chunks are kept"
    )
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own choice)")


def config_from(args) -> DistillConfig:
    """The build's settings from the flags; ValueError (one sentence) when one is out of range."""
    if not 1 <= args.max_context <= MAX_CONTEXT:
        raise ValueError(f"--max-context must be between 1 and {MAX_CONTEXT}, got {args.max_context}")
    if not 1 <= args.top_k <= 64:
        raise ValueError(f"--top-k must be between 1 and 64, got {args.top_k}")
    if args.min_count < 1 or args.limit_chars < 0:
        raise ValueError("--min-count must be 1 or more and --limit-chars 0 or more")
    if not Path(args.data).is_file():
        raise ValueError(f"corpus not found: {args.data}")
    writable_file(args.out)
    writable_folder(args.resume_dir)
    if args.threads is not None and not 1 <= args.threads <= 256:
        raise ValueError(f"--threads must be between 1 and 256, got {args.threads}")
    return DistillConfig(max_context=args.max_context, top_k=args.top_k, min_count=args.min_count,
                         limit_chars=args.limit_chars)  # fmt: skip
