"""Train an EAGLE draft head on the frozen target: ``python -m specviz train-eagle --variant 1|3``.

The target never trains: each batch's features are computed under no_grad, on the fly (windows
of --block + 1 characters from the first 90% of the corpus, the target's training split), and the
head learns what models/eagle.py describes: EAGLE-1 (feature regression + 0.1 CE, step 0 only),
EAGLE-3 with training-time test (--ttt-steps unrolled steps, summed CE), or EAGLE-3 without it
(--no-ttt: step 0 only). AdamW, warmup then cosine decay, as specviz/training/train.py; every step reseeds
from (seed, step), so a run resumed from --resume-dir takes the same batches as an uninterrupted one.

Validation (the last 10%): ``depth_accuracy`` drafts greedily from the end of evenly spaced
windows, the head feeding back its own states and tokens exactly as the drafter does, and compares
with the target's own greedy continuation: at depth d, the fraction of windows whose first d draft
tokens all equal the target's (what greedy verification accepts), and that over depth d - 1's (the
chance of depth d given that the draft got that far).
"""

import argparse
import hashlib
import math
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch
from tqdm import tqdm

from models.checkpoint import load_checkpoint
from models.eagle import EagleConfig, EagleHead, save_head
from specviz.core.outputs import writable_file, writable_folder
from specviz.training.distill import DEFAULT_CORPUS
from specviz.training.train import HeadResume, split

DEPTHS = 4
LAYERS = {1: (3,), 3: (0, 1, 3)}  # see models/eagle.py for why (0, 1, 3)


@torch.no_grad()
def head_draft(head: EagleHead, feats: torch.Tensor, tokens: torch.Tensor, k: int) -> torch.Tensor:
    """Greedy drafts of k tokens after each row of a batch. feats (F, B, T, C): the target's features
    of context entries 0..T-1; tokens (B, T): the tokens those entries read (context[1..T], the last
    one the root). Step 0 reads the true features, step j >= 1 the head's own last state and token,
    attending to all that came before (a chain: no mask needed for one new row). -> (B, k)"""
    h, kv = head.step(head.fused(feats), tokens)  # (B, T, C)
    out = []
    for _ in range(k):
        x = head.logits(h[:, -1:]).argmax(-1)  # (B, 1)
        out.append(x)
        h, kv = head.step(h[:, -1:], x, kv)
    return torch.cat(out, dim=1)


@torch.no_grad()
def greedy_matches(head, target, ids: torch.Tensor, windows: int, block: int, depths: int, batch: int,
                   draft) -> list[float]:  # fmt: skip
    """Over ``windows`` evenly spaced windows of ``ids`` (the last character the root), the share whose first d
    draft tokens all equal the target's greedy continuation, d = 1..depths. ``draft(feats (F, B, block - 1, C),
    tokens (B, block - 1)) -> (B, depths)`` drafts greedily from the context entries' features."""
    was = head.training
    head.eval()
    starts = torch.linspace(0, len(ids) - block - depths - 1, windows).long().tolist()
    match = torch.zeros(depths)
    for i in range(0, windows, batch):
        ctx = torch.stack([ids[s : s + block] for s in starts[i : i + batch]])  # (B, block), the last is the root
        seq = ctx
        for _ in range(depths):  # the target's greedy continuation
            logits, _ = target(seq, torch.arange(seq.size(1)))
            seq = torch.cat([seq, logits[:, -1:].argmax(-1)], dim=1)
        feats = target.features(ctx[:, :-1], head.config.layers)  # (F, B, block - 1, C)
        match += (draft(feats, ctx[:, 1:]) == seq[:, block:]).long().cumprod(1).sum(0)
    head.train(was)
    return (match / windows).tolist()


@torch.no_grad()
def depth_accuracy(head: EagleHead, target, ids: torch.Tensor, windows: int = 256, block: int = 128,
                   depths: int = DEPTHS, batch: int = 64) -> dict:  # fmt: skip
    """Greedy acceptance by draft depth on ``ids`` (see the module docstring). -> {"cumulative":
    [d1..], "conditional": [...], "windows": n}"""
    cum = greedy_matches(head, target, ids, windows, block, depths, batch,
                         lambda feats, tokens: head_draft(head, feats, tokens, depths))  # fmt: skip
    cond = [c / p if p else 0.0 for c, p in zip(cum, [1.0] + cum[:-1], strict=True)]
    return {"cumulative": [round(c, 4) for c in cum], "conditional": [round(c, 4) for c in cond], "windows": windows}


def learning_rate(it: int, args) -> float:
    if it < args.warmup_iters:
        return args.lr * (it + 1) / (args.warmup_iters + 1)
    ratio = (it - args.warmup_iters) / max(1, args.max_iters - args.warmup_iters)
    return args.min_lr + 0.5 * (1.0 + math.cos(math.pi * min(ratio, 1.0))) * (args.lr - args.min_lr)


def run_iterations(args, head, train_ids: torch.Tensor, resume: HeadResume, loss_of, evaluate) -> tuple[dict, float]:
    """The training loop of a head on the frozen target (train-eagle, train-dflash): from where ``resume`` left
    off, per iteration a batch of windows of --block + 1 characters drawn with a generator seeded from
    (seed, iteration), ``loss_of(x (B, T+1), gen) -> (loss, metrics)``, AdamW's step with the scheduled rate
    and clipped gradients; every --eval-interval iterations a line from ``evaluate(metrics)`` and the resume
    state. A progress bar with an ETA on stderr. -> (the last metrics, seconds spent in all runs)"""
    start, elapsed = resume.load(args.out)
    opt, T = resume.opt, args.block
    head.train()
    bar = tqdm(range(start, args.max_iters), initial=start, total=args.max_iters, desc=f"training {Path(args.out).name}",
               unit="it", file=sys.stderr)  # fmt: skip
    metrics = {}
    for it in bar:
        t0 = time.perf_counter()
        gen = torch.Generator().manual_seed(args.seed * 1_000_003 + it)
        for group in opt.param_groups:
            group["lr"] = learning_rate(it, args)
        ix = torch.randint(len(train_ids) - T - 2, (args.batch_size,), generator=gen).tolist()
        loss, metrics = loss_of(torch.stack([train_ids[i : i + T + 1] for i in ix]), gen)  # (B, T+1) windows
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(head.parameters(), 1.0)
        opt.step()
        elapsed += time.perf_counter() - t0
        bar.set_postfix({k: f"{v:.3f}" for k, v in list(metrics.items())[:4]})
        if (it + 1) % args.eval_interval == 0 and it + 1 < args.max_iters:
            bar.write(f"iter {it + 1}: {evaluate(metrics)}")
            resume.save(it + 1, elapsed)
    bar.close()
    return metrics, elapsed


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--variant", type=int, choices=(1, 3), required=True, help="1: EAGLE-1, 3: EAGLE-3")
    p.add_argument("--no-ttt", action="store_true", help="EAGLE-3 without training-time test (step 0 only)")
    p.add_argument("--ttt-steps", type=int, default=4, help="EAGLE-3: steps unrolled in training (2..8)")
    p.add_argument("--out", required=True, help="the head to write (.safetensors), e.g. models/eagle3.safetensors")
    add_loop_args(p, iters=1000, batch=16, eval_interval=250)


def add_loop_args(p: argparse.ArgumentParser, iters: int, batch: int, eval_interval: int) -> None:
    """The flags of run_iterations and of the corpus and target it trains on (train-eagle, train-dflash)."""
    p.add_argument("--data", default=str(DEFAULT_CORPUS), help="the corpus (Tiny Shakespeare)")
    p.add_argument("--target", default="target", help="the frozen target checkpoint")
    p.add_argument("--max-iters", type=int, default=iters)
    p.add_argument("--batch-size", type=int, default=batch)
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


def check_args(args, block_size: int) -> None:
    """ValueError, one sentence, for flags out of range (before any work)."""
    if args.no_ttt and args.variant != 3:
        raise ValueError("--no-ttt applies to --variant 3 only (EAGLE-1 trains step 0 only)")
    if not 2 <= args.ttt_steps <= 8:
        raise ValueError(f"--ttt-steps must be between 2 and 8, got {args.ttt_steps}")
    if not 8 <= args.block < block_size:
        raise ValueError(f"--block must be between 8 and {block_size - 1}, got {args.block}")
    check_loop_args(args)


def check_loop_args(args) -> None:
    """ValueError, one sentence, for add_loop_args's flags out of range (but --block: each command's own)."""
    if not 1 <= args.max_iters <= 1_000_000 or not 1 <= args.batch_size <= 4096:
        raise ValueError("--max-iters must be 1..1000000 and --batch-size 1..4096")
    if not 1 <= args.threads <= 256 or not args.eval_interval >= 1 or not 1 <= args.eval_windows <= 100_000:
        raise ValueError("--threads must be 1..256, --eval-interval 1 or more, --eval-windows 1..100000")
    if not (0 < args.lr < 1):
        raise ValueError(f"--lr must be between 0 and 1, got {args.lr}")
    if not Path(args.data).is_file():
        raise ValueError(f"corpus not found: {args.data}")
    writable_file(args.out)
    writable_folder(args.resume_dir)


def frozen_target(args) -> tuple:
    """What a head trains on: (the target Checkpoint, its model frozen, the corpus text, train ids, val ids),
    the schedule's warmup and floor set on ``args``, and torch seeded for the head's initial weights."""
    target = load_checkpoint(args.target)
    model = target.model.requires_grad_(False)
    text = Path(args.data).read_text(encoding="utf-8")
    train_ids, val_ids = split(torch.tensor(target.tokenizer.encode(text), dtype=torch.long))
    args.warmup_iters, args.min_lr = min(100, args.max_iters // 10), args.lr / 10
    torch.manual_seed(args.seed)
    return target, model, text, train_ids, val_ids


def resume_state(args, head, prefix: str, extra: str = "") -> HeadResume:
    """AdamW on the head, and its resume state: one per (output, config, run length, ``extra`` flags), never
    continued with other settings."""
    opt = torch.optim.AdamW(head.parameters(), lr=args.lr, betas=(0.9, 0.99), weight_decay=0.0)
    tag = hashlib.sha256(f"{Path(args.out).resolve()} {asdict(head.config)} {args.max_iters} {args.batch_size} "
                         f"{args.block}{extra} {args.seed} {args.lr}".encode()).hexdigest()[:16]  # fmt: skip
    return HeadResume(Path(args.resume_dir) / f"{prefix}-{tag}.pt", head, opt)


def train(args, command: str) -> dict:
    torch.set_num_threads(args.threads)
    target, model, text, train_ids, val_ids = frozen_target(args)
    steps = 1 if args.variant == 1 or args.no_ttt else args.ttt_steps
    config = EagleConfig(args.variant, LAYERS[args.variant], model.config.n_embd, model.config.n_head,
                         model.config.vocab_size, steps)  # fmt: skip
    head = EagleHead(config).attach(model)
    resume = resume_state(args, head, "eagle")

    def loss_of(x: torch.Tensor, gen: torch.Generator):
        with torch.no_grad():
            feats = model.features(x, config.layers)  # (F, B, T+1, C), the frozen target
        # entry i reads (f_i, x_{i+1}); its labels are the top feature f_{i+1} and p_{i+1}
        return head.loss(feats[:, :, : args.block], x[:, 1:], feats[-1][:, 1:], steps)

    def evaluate(metrics: dict) -> str:
        acc = depth_accuracy(head, model, val_ids, windows=min(64, args.eval_windows), block=args.block)
        return f"{metrics}, val greedy acceptance by depth (64 windows) {acc['cumulative']}"

    metrics, elapsed = run_iterations(args, head, train_ids, resume, loss_of, evaluate)
    T = args.block
    meta = {"command": command, "iterations": args.max_iters, "train_seconds": round(elapsed, 1),
            "threads": args.threads, "batch_size": args.batch_size, "block": T, "seed": args.seed, "lr": args.lr,
            "ttt_steps": steps, "final_losses": {k: round(v, 4) for k, v in metrics.items()},
            "corpus_sha256": hashlib.sha256(text.encode()).hexdigest(), "torch": torch.__version__}  # fmt: skip
    save_head(args.out, head, target.path, meta)
    # Measured after the float16 round trip: the accuracy of the file as shipped.
    from models.eagle import load_head

    shipped = load_head(args.out, target)
    meta["val_depth_accuracy"] = depth_accuracy(shipped, model, val_ids, windows=args.eval_windows)
    save_head(args.out, head, target.path, meta)
    resume.done()
    return meta
