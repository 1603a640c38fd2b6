"""Train the MTP modules on the frozen target: ``python -m specviz train-mtp``.

The target never trains: each batch's top features and next-token distributions are computed under
no_grad, on the fly (windows of --block characters from the first 90% of the corpus, the target's
training split), and the D modules learn what models/mtp.py describes: module k, teacher-forced,
matches the target's distribution k + 1 steps after each position; the loss is the mean over depths.
AdamW, warmup then cosine decay (specviz/training/heads.py fit); every step reseeds from (seed, step), so a
run resumed from --resume-dir takes the same batches as an uninterrupted one.

Validation (the last 10%): ``depth_accuracy`` drafts greedily from the end of evenly spaced windows,
module k reading module k - 1's states and the tokens drafted before it, exactly as the drafter does,
and compares with the target's own greedy continuation: at depth d, the fraction of windows whose
first d draft tokens all equal the target's (what greedy verification accepts), and that over depth
d - 1's (the chance of depth d given that the draft got that far: DeepSeek's "acceptance of the
second token" is depth 2's).
"""

import argparse
import hashlib

import torch

from models.mtp import MTPConfig, MTPHeads, load_mtp, save_mtp
from specviz.training import heads as shared


@torch.no_grad()
def mtp_draft(heads: MTPHeads, h0: torch.Tensor, ctx: torch.Tensor, k: int) -> torch.Tensor:
    """Greedy drafts of k tokens after each row, recomputed from scratch at every depth (no cache: the
    reference the drafter's cached passes must equal). h0 (B, P, C): the target's top features of
    ctx[:, :P]; ctx (B, P + 1): the context, its last token the root. -> (B, k)"""
    seq = ctx
    for d in range(1, k + 1):
        h = heads.unroll(h0, seq, d)[-1]  # (B, P, C): module d's entries; the last drafts depth d
        seq = torch.cat([seq, heads.logits(h[:, -1:]).argmax(-1)], dim=1)
    return seq[:, ctx.size(1) :]


def depth_accuracy(heads: MTPHeads, target, ids: torch.Tensor, windows: int = 256, block: int = 128) -> dict:
    """Greedy acceptance by draft depth 1..D on ``ids`` (see the module docstring and heads.depth_accuracy)."""
    top = (target.config.n_layer - 1,)
    draft = lambda ctx: mtp_draft(heads, target.features(ctx[:, :-1], top)[0], ctx, heads.config.depth)  # noqa: E731
    return shared.depth_accuracy(draft, target, ids, heads.config.depth, windows, block)


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--depth", type=int, default=MTPConfig.depth, help="D, the modules (one per draft depth, 1..8)")
    p.add_argument("--out", default="models/mtp.safetensors", help="the modules to write (.safetensors)")
    shared.add_head_args(p, max_iters=900, batch_size=16, eval_interval=200)


def check_args(args, block_size: int) -> None:
    """ValueError, one sentence, for flags out of range (before any work)."""
    if not 1 <= args.depth <= 8:
        raise ValueError(f"--depth must be between 1 and 8, got {args.depth}")
    shared.check_head_args(args, args.depth + 8, block_size)


def train(args, command: str) -> dict:
    torch.set_num_threads(args.threads)
    target, model, text, train_ids, val_ids = shared.frozen_target(args)
    top = (model.config.n_layer - 1,)
    c = model.config
    config = MTPConfig(args.depth, c.n_embd, c.n_head, c.vocab_size)
    heads = MTPHeads(config).attach(model)
    opt, resume = shared.optimiser(heads, args, "mtp")
    T = args.block

    def batch_loss(gen):
        x = shared.batch_windows(train_ids, T, args.batch_size, gen)  # (B, T)
        with torch.no_grad():
            h0 = model.features(x, top)[0]  # (B, T, C), the frozen target
        return heads.loss(h0, x)

    def quick_eval() -> str:
        heads.eval()
        acc = depth_accuracy(heads, model, val_ids, windows=min(64, args.eval_windows), block=T)
        heads.train()
        return f"val greedy acceptance by depth (64 windows) {acc['cumulative']}"

    metrics, elapsed = shared.fit(heads, opt, args, resume, batch_loss, quick_eval)
    meta = {"command": command, "iterations": args.max_iters, "train_seconds": round(elapsed, 1),
            "threads": args.threads, "batch_size": args.batch_size, "block": T, "seed": args.seed, "lr": args.lr,
            "final_losses": {k: round(v, 4) for k, v in metrics.items()},
            "corpus_sha256": hashlib.sha256(text.encode()).hexdigest(), "torch": torch.__version__}  # fmt: skip
    save_mtp(args.out, heads, target.path, meta)
    # Measured after the float16 round trip: the accuracy of the file as shipped.
    meta["val_depth_accuracy"] = depth_accuracy(load_mtp(args.out, target), model, val_ids, windows=args.eval_windows)
    save_mtp(args.out, heads, target.path, meta)
    resume.done()
    return meta
