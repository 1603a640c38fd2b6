"""What training a draft head on the frozen target takes, whichever head (train_eagle, train_mtp, train_dflash): the
shared flags and their checks, the training loop (progress bar with ETA, resume, one seed per step)
and the greedy acceptance by draft depth on the validation split."""

import argparse
import hashlib
import math
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import torch
from tqdm import tqdm

from models.checkpoint import load_checkpoint
from specviz.core.outputs import writable_file, writable_folder
from specviz.training.distill import DEFAULT_CORPUS
from specviz.training.train import HeadResume, split


def add_head_args(p: argparse.ArgumentParser, max_iters: int, batch_size: int, eval_interval: int) -> None:
    """The flags every head's training takes, after its own (--out first among them)."""
    p.add_argument("--data", default=str(DEFAULT_CORPUS), help="the corpus (Tiny Shakespeare)")
    p.add_argument("--target", default="target", help="the frozen target checkpoint")
    p.add_argument("--max-iters", type=int, default=max_iters)
    p.add_argument("--batch-size", type=int, default=batch_size)
    p.add_argument("--block", type=int, default=128, help="window length (head entries per sequence)")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument(
        "--eval-interval", type=int, default=eval_interval, help="iterations between checkpoints and a quick eval"
    )
    p.add_argument("--eval-windows", type=int, default=256, help="validation windows of the final accuracy")
    p.add_argument(
        "--resume-dir", default=str(Path.home() / ".cache" / "specviz"), help="where the resume state is kept"
    )


def check_head_args(args, block_lo: int, block_hi: int) -> None:
    """ValueError, one sentence, for the shared flags out of range (before any work)."""
    if not 1 <= args.max_iters <= 1_000_000 or not 1 <= args.batch_size <= 4096:
        raise ValueError("--max-iters must be 1..1000000 and --batch-size 1..4096")
    if not block_lo <= args.block <= block_hi:
        raise ValueError(f"--block must be between {block_lo} and {block_hi}, got {args.block}")
    if not 1 <= args.threads <= 256 or not args.eval_interval >= 1 or not 1 <= args.eval_windows <= 100_000:
        raise ValueError("--threads must be 1..256, --eval-interval 1 or more, --eval-windows 1..100000")
    if not (0 < args.lr < 1):
        raise ValueError(f"--lr must be between 0 and 1, got {args.lr}")
    if not Path(args.data).is_file():
        raise ValueError(f"corpus not found: {args.data}")
    writable_file(args.out)
    writable_folder(args.resume_dir)


def frozen_target(args) -> tuple:
    """What a head trains on: (the --target Checkpoint, its model frozen, the corpus text, train ids, val ids),
    with torch seeded from --seed for the head's initial weights."""
    target = load_checkpoint(args.target)
    model = target.model.requires_grad_(False)
    text = Path(args.data).read_text(encoding="utf-8")
    train_ids, val_ids = split(torch.tensor(target.tokenizer.encode(text), dtype=torch.long))
    torch.manual_seed(args.seed)
    return target, model, text, train_ids, val_ids


def optimiser(head: torch.nn.Module, args, kind: str, extra: str = "") -> tuple[torch.optim.Optimizer, HeadResume]:
    """AdamW over the head's parameters and its resume state under --resume-dir, one per (output, config,
    run length, ``extra``: the head's own flags): never continued with other settings."""
    opt = torch.optim.AdamW(head.parameters(), lr=args.lr, betas=(0.9, 0.99), weight_decay=0.0)
    tag = hashlib.sha256(f"{Path(args.out).resolve()} {asdict(head.config)} {args.max_iters} {args.batch_size} "
                         f"{args.block}{extra} {args.seed} {args.lr}".encode()).hexdigest()[:16]  # fmt: skip
    return opt, HeadResume(Path(args.resume_dir) / f"{kind}-{tag}.pt", head, opt)


def batch_windows(ids: torch.Tensor, length: int, batch_size: int, gen: torch.Generator) -> torch.Tensor:
    """A batch of windows of ``length`` tokens from ``ids``, at starts drawn from ``gen``. -> (B, length)"""
    ix = torch.randint(len(ids) - length - 1, (batch_size,), generator=gen).tolist()
    return torch.stack([ids[i : i + length] for i in ix])


def learning_rate(it: int, args) -> float:
    if it < args.warmup_iters:
        return args.lr * (it + 1) / (args.warmup_iters + 1)
    ratio = (it - args.warmup_iters) / max(1, args.max_iters - args.warmup_iters)
    return args.min_lr + 0.5 * (1.0 + math.cos(math.pi * min(ratio, 1.0))) * (args.lr - args.min_lr)


def fit(head: torch.nn.Module, opt, args, resume: HeadResume, batch_loss: Callable, quick_eval: Callable) -> tuple:
    """AdamW steps from where ``resume`` left off to --max-iters: warmup then cosine decay, each step's
    batch drawn from its own seed (so a resumed run takes the batches an uninterrupted one would),
    ``batch_loss(gen) -> (loss, metrics)``; every --eval-interval a quick ``quick_eval() -> text`` and the
    resume state. -> (the last metrics, seconds spent training, this run and the resumed ones)"""
    args.warmup_iters, args.min_lr = min(100, args.max_iters // 10), args.lr / 10
    start, elapsed = resume.load(args.out)
    head.train()
    bar = tqdm(range(start, args.max_iters), initial=start, total=args.max_iters, desc=f"training {Path(args.out).name}",
               unit="it", file=sys.stderr)  # fmt: skip
    metrics = {}
    for it in bar:
        t0 = time.perf_counter()
        gen = torch.Generator().manual_seed(args.seed * 1_000_003 + it)
        for group in opt.param_groups:
            group["lr"] = learning_rate(it, args)
        loss, metrics = batch_loss(gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(head.parameters(), 1.0)
        opt.step()
        elapsed += time.perf_counter() - t0
        bar.set_postfix({k: f"{v:.3f}" for k, v in metrics.items()})
        if (it + 1) % args.eval_interval == 0 and it + 1 < args.max_iters:
            bar.write(f"iter {it + 1}: {metrics}, {quick_eval()}")
            resume.save(it + 1, elapsed)
    bar.close()
    return metrics, elapsed


@torch.no_grad()
def depth_accuracy(draft: Callable, target, ids: torch.Tensor, depths: int, windows: int = 256, block: int = 128,
                   batch: int = 64) -> dict:  # fmt: skip
    """Greedy acceptance by draft depth on ``ids``: ``draft(ctx (B, block)) -> (B, depths)`` drafts after each
    row's last token (the root), and is compared with the target's own greedy continuation. At depth d, the
    fraction of windows whose first d draft tokens all equal the target's (what greedy verification
    accepts), and that over depth d - 1's (the chance of depth d given that the draft got that far).
    -> {"cumulative": [d1..], "conditional": [...], "windows": n}"""
    last = len(ids) - block - depths - 1
    starts = torch.linspace(0, last, windows).long().tolist()
    match = torch.zeros(depths)
    for i in range(0, windows, batch):
        ctx = torch.stack([ids[s : s + block] for s in starts[i : i + batch]])  # (B, block), the last is the root
        seq = ctx
        for _ in range(depths):  # the target's greedy continuation
            logits, _ = target(seq, torch.arange(seq.size(1)))
            seq = torch.cat([seq, logits[:, -1:].argmax(-1)], dim=1)
        match += (draft(ctx) == seq[:, block:]).long().cumprod(1).sum(0)
    cum = (match / windows).tolist()
    cond = [c / p if p else 0.0 for c, p in zip(cum, [1.0] + cum[:-1], strict=True)]
    return {"cumulative": [round(c, 4) for c in cum], "conditional": [round(c, 4) for c in cond], "windows": windows}
