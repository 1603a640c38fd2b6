"""Train Medusa heads on the frozen target: ``python -m specviz train-medusa``.

Medusa-1 (Cai et al., 2024): the target stays frozen; only the heads learn (models/medusa.py).
Batches are random windows of the training split (the first 90% of the corpus, as for the target);
the target's top-layer features of a window, h_0..h_{T-1}, come from one no-grad pass, and head i
is scored by cross-entropy against the corpus token i + 1 steps after each position:

    loss = sum_i 0.8^(i-1) * CE(head_i(h_t), x_{t+1+i})      t = 0 .. T-2-i

(Medusa-1's decay: farther heads are harder and noisier, so they weigh less.) AdamW with warmup
and cosine decay (specviz.training.train.learning_rate). Every step reseeds from (seed, step), and the
heads, the optimizer and the clock are saved to the resume folder every ``--eval-interval``
steps and on Ctrl-C, so an interrupted run continues where it stopped and takes the same batches.
At the end, each head's top-1 accuracy on the validation split (the last 10%) goes into the
file's header, and from there into the model card.
"""

import argparse
import hashlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import torch
from torch.nn import functional as F
from tqdm import tqdm

from models.artifacts import record_artifact, sha256
from models.checkpoint import checkpoint_header, checkpoint_path, load_checkpoint
from models.medusa import DEFAULT_PATH, MedusaHeads, save_heads
from specviz.core.outputs import writable_file, writable_folder
from specviz.training.distill import DEFAULT_CORPUS
from specviz.training.train import HeadResume, get_batch, learning_rate, split

DECAY = 0.8  # Medusa-1's per-head loss weight: head i weighs DECAY^(i-1)


@dataclass
class MedusaTrainConfig:
    heads: int = 4
    max_iters: int = 600
    batch_size: int = 16
    block: int = 128  # window length; at most the target's block_size
    seed: int = 1337
    lr: float = 1e-3
    eval_interval: int = 50  # steps between resume saves


def head_losses(heads: MedusaHeads, feats: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of each head: head i at position t against x[t + 1 + i].
    feats: (B, T, C) top-layer features of x (B, T). -> (H,)"""
    logits = heads(feats)  # (H, B, T, V)
    T = x.size(1)
    return torch.stack([F.cross_entropy(logits[i - 1, :, : T - 1 - i].flatten(0, 1).float(), x[:, 1 + i :].flatten())
                        for i in range(1, len(logits) + 1)])  # fmt: skip


@torch.no_grad()
def head_accuracy(target, heads: MedusaHeads, ids: torch.Tensor, batch: int = 16) -> dict:
    """Top-1 accuracy of every head, and of the target's own lm_head (its "head 0"), against the
    text over non-overlapping block_size windows of ``ids``: head i at t against ids[t + 1 + i]."""
    T, layer = target.config.block_size, heads.config.feature_layer
    n = (len(ids) - 1) // T
    hits, counts = torch.zeros(heads.config.n_heads + 1), torch.zeros(heads.config.n_heads + 1)
    for s in range(0, n, batch):
        x = torch.stack([ids[j * T : (j + 1) * T] for j in range(s, min(s + batch, n))])  # (B, T)
        feats = target.features(x, (layer,))[0]  # (B, T, C)
        guesses = torch.cat([target.lm_head(target.transformer.ln_f(feats))[None], heads(feats)]).argmax(-1)
        for i in range(len(guesses)):  # i = 0: the target's next token; i >= 1: head i
            hits[i] += (guesses[i, :, : T - 1 - i] == x[:, 1 + i :]).sum()
            counts[i] += x[:, 1 + i :].numel()
    acc = (hits / counts).tolist()
    return {"target_top1": round(acc[0], 4), "head_top1": [round(a, 4) for a in acc[1:]], "val_chars": len(ids)}


def train(args, cfg: MedusaTrainConfig, command: str) -> dict:
    t_start = time.perf_counter()
    target = load_checkpoint(args.target)
    model = target.model
    raw = Path(args.data).read_bytes()
    ids = torch.tensor(target.tokenizer.encode(raw.decode("utf-8")), dtype=torch.long)
    train_ids, val_ids = split(ids)
    target_sha = sha256(target.path)
    torch.manual_seed(cfg.seed)
    heads = MedusaHeads.from_target(model, cfg.heads)
    opt = torch.optim.AdamW(heads.trainable(), lr=cfg.lr, betas=(0.9, 0.99), weight_decay=0.0)
    sched = SimpleNamespace(lr=cfg.lr, min_lr=cfg.lr / 10, warmup_iters=min(50, cfg.max_iters // 10),
                            lr_decay_iters=cfg.max_iters)  # fmt: skip
    # One resume file per (target, corpus, settings): a state is never reused for other inputs.
    tag = hashlib.sha256(f"{target_sha} {hashlib.sha256(raw).hexdigest()} {cfg}".encode()).hexdigest()[:16]
    resume = HeadResume(Path(args.resume_dir) / f"medusa-{tag}.pt", heads, opt)
    start, elapsed = resume.load("the Medusa heads")

    def save_state(it: int) -> None:
        resume.save(it, elapsed)

    layer = heads.config.feature_layer
    bar = tqdm(range(start, cfg.max_iters), initial=start, total=cfg.max_iters, desc="training Medusa heads",
               unit="it", file=sys.stderr, disable=None)  # fmt: skip
    it = start
    try:
        for it in bar:
            t0 = time.perf_counter()
            gen = torch.Generator().manual_seed(cfg.seed * 1_000_003 + it)  # batches depend on (seed, step) only
            x, _ = get_batch(train_ids, cfg.block, cfg.batch_size, gen, "cpu")  # (B, T)
            with torch.no_grad():
                feats = model.features(x, (layer,))[0]  # (B, T, C), the frozen target
            losses = head_losses(heads, feats, x)  # (H,)
            loss = (losses * DECAY ** torch.arange(len(losses))).sum()
            for group in opt.param_groups:
                group["lr"] = learning_rate(it, sched)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            elapsed += time.perf_counter() - t0
            bar.set_postfix(loss=f"{loss.item():.3f}", head1=f"{losses[0].item():.3f}")
            if (it + 1) % cfg.eval_interval == 0 and it + 1 < cfg.max_iters:
                save_state(it + 1)
        it = cfg.max_iters
    except KeyboardInterrupt:
        bar.close()
        save_state(it)
        print(f"\ninterrupted at iteration {it}; state saved. Run the same command again to continue.", file=sys.stderr)
        raise SystemExit(130) from None
    bar.close()
    heads.eval()
    t_eval = time.perf_counter()
    acc = head_accuracy(model, heads, val_ids)
    meta = {
        "target_sha256": target_sha,
        "target_file": checkpoint_path(args.target).name,
        "corpus_sha256": hashlib.sha256(raw).hexdigest(),
        "train": {"iterations": cfg.max_iters, "batch_size": cfg.batch_size, "block": cfg.block, "seed": cfg.seed,
                  "lr": cfg.lr, "loss_decay": DECAY, "train_chars": len(train_ids)},
        "val": acc,
        "command": command,
        "train_seconds": round(elapsed, 1),
        "eval_seconds": round(time.perf_counter() - t_eval, 1),
        "total_seconds": round(time.perf_counter() - t_start, 1),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
    }  # fmt: skip
    save_heads(Path(args.out), heads, meta)
    record_artifact(Path(args.out))  # the shipped heads' line in models/SHA256SUMS follows the new file
    resume.done()
    return meta


def add_args(p: argparse.ArgumentParser) -> None:
    d = MedusaTrainConfig()
    p.add_argument("--data", default=str(DEFAULT_CORPUS), help="the training corpus (Tiny Shakespeare)")
    p.add_argument("--target", default="target", help="the frozen checkpoint the heads read")
    p.add_argument("--out", default=str(DEFAULT_PATH), help="the heads to write (.safetensors)")
    p.add_argument("--heads", type=int, default=d.heads, help="H, the number of heads (1..8)")
    p.add_argument("--max-iters", type=int, default=d.max_iters, help="training steps (1..1000000)")
    p.add_argument("--batch-size", type=int, default=d.batch_size, help="windows per step (1..1024)")
    p.add_argument("--block", type=int, default=d.block, help="window length (heads + 2 .. the target's block_size)")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--lr", type=float, default=d.lr, help="peak learning rate (0 < lr <= 1)")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own choice)")
    p.add_argument("--resume-dir", default=str(Path.home() / ".cache" / "specviz"),
                   help="where the training state is kept, to continue after an interruption")  # fmt: skip


def config_from(args) -> MedusaTrainConfig:
    """The run's settings from the flags; ValueError (one sentence) when one is out of range.
    Reads only the target's header, so a bad flag costs nothing."""
    if not 1 <= args.heads <= 8:
        raise ValueError(f"--heads must be between 1 and 8, got {args.heads}")
    if not 1 <= args.max_iters <= 1_000_000:
        raise ValueError(f"--max-iters must be between 1 and 1000000, got {args.max_iters}")
    if not 1 <= args.batch_size <= 1024:
        raise ValueError(f"--batch-size must be between 1 and 1024, got {args.batch_size}")
    if not 0 <= args.seed <= 2**63 - 1:
        raise ValueError(f"--seed must be between 0 and 2^63 - 1, got {args.seed}")
    if not 0 < args.lr <= 1:  # also refuses nan
        raise ValueError(f"--lr must be in (0, 1], got {args.lr}")
    if args.threads is not None and not 1 <= args.threads <= 256:
        raise ValueError(f"--threads must be between 1 and 256, got {args.threads}")
    if not Path(args.data).is_file():
        raise ValueError(f"corpus not found: {args.data}")
    config, _, _ = checkpoint_header(args.target)  # CheckpointError (one line) for a bad checkpoint
    if not args.heads + 2 <= args.block <= config.block_size:
        raise ValueError(f"--block must be between --heads + 2 ({args.heads + 2}) and the target's block_size "
                         f"({config.block_size}), got {args.block}")  # fmt: skip
    writable_file(args.out)
    writable_folder(args.resume_dir)
    return MedusaTrainConfig(heads=args.heads, max_iters=args.max_iters, batch_size=args.batch_size,
                             block=args.block, seed=args.seed, lr=args.lr)  # fmt: skip
