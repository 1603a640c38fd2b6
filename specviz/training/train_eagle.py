"""Train an EAGLE draft head on the frozen target: ``python -m specviz train-eagle --variant 1|3``.

The target never trains: each batch's features are computed under no_grad, on the fly (windows
of --block + 1 characters from the first 90% of the corpus, the target's training split), and the
head learns what models/eagle.py describes: EAGLE-1 (feature regression + 0.1 CE, step 0 only),
EAGLE-3 with training-time test (--ttt-steps unrolled steps, summed CE), or EAGLE-3 without it
(--no-ttt: step 0 only). AdamW, warmup then cosine decay (specviz/training/heads.py fit); every step reseeds
from (seed, step), so a run resumed from --resume-dir takes the same batches as an uninterrupted one.

Validation (the last 10%): ``depth_accuracy`` drafts greedily from the end of evenly spaced
windows, the head feeding back its own states and tokens exactly as the drafter does, and compares
with the target's own greedy continuation: at depth d, the fraction of windows whose first d draft
tokens all equal the target's (what greedy verification accepts), and that over depth d - 1's (the
chance of depth d given that the draft got that far).
"""

import argparse
import hashlib

import torch

from models.eagle import EagleConfig, EagleHead, save_head
from specviz.training import heads

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


def depth_accuracy(head: EagleHead, target, ids: torch.Tensor, windows: int = 256, block: int = 128) -> dict:
    """Greedy acceptance by draft depth on ``ids`` (see the module docstring and heads.depth_accuracy)."""
    was = head.training
    head.eval()
    draft = lambda ctx: head_draft(head, target.features(ctx[:, :-1], head.config.layers), ctx[:, 1:], DEPTHS)  # noqa: E731
    acc = heads.depth_accuracy(draft, target, ids, DEPTHS, windows, block)
    head.train(was)
    return acc


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--variant", type=int, choices=(1, 3), required=True, help="1: EAGLE-1, 3: EAGLE-3")
    p.add_argument("--no-ttt", action="store_true", help="EAGLE-3 without training-time test (step 0 only)")
    p.add_argument("--ttt-steps", type=int, default=4, help="EAGLE-3: steps unrolled in training (2..8)")
    p.add_argument("--out", required=True, help="the head to write (.safetensors), e.g. models/eagle3.safetensors")
    heads.add_head_args(p, max_iters=1000, batch_size=16, eval_interval=250)


def check_args(args, block_size: int) -> None:
    """ValueError, one sentence, for flags out of range (before any work)."""
    if args.no_ttt and args.variant != 3:
        raise ValueError("--no-ttt applies to --variant 3 only (EAGLE-1 trains step 0 only)")
    if not 2 <= args.ttt_steps <= 8:
        raise ValueError(f"--ttt-steps must be between 2 and 8, got {args.ttt_steps}")
    heads.check_head_args(args, 8, block_size - 1)


def train(args, command: str) -> dict:
    torch.set_num_threads(args.threads)
    target, model, text, train_ids, val_ids = heads.frozen_target(args)
    steps = 1 if args.variant == 1 or args.no_ttt else args.ttt_steps
    config = EagleConfig(args.variant, LAYERS[args.variant], model.config.n_embd, model.config.n_head,
                         model.config.vocab_size, steps)  # fmt: skip
    head = EagleHead(config).attach(model)
    opt, resume = heads.optimiser(head, args, "eagle")
    T = args.block

    def batch_loss(gen):
        x = heads.batch_windows(train_ids, T + 1, args.batch_size, gen)  # (B, T+1)
        with torch.no_grad():
            feats = model.features(x, config.layers)  # (F, B, T+1, C), the frozen target
        # entry i reads (f_i, x_{i+1}); its labels are the top feature f_{i+1} and p_{i+1}
        return head.loss(feats[:, :, :T], x[:, 1:], feats[-1][:, 1:], steps)

    def quick_eval() -> str:
        acc = depth_accuracy(head, model, val_ids, windows=min(64, args.eval_windows), block=T)
        return f"val greedy acceptance by depth (64 windows) {acc['cumulative']}"

    metrics, elapsed = heads.fit(head, opt, args, resume, batch_loss, quick_eval)
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
