"""Train the parallel (DFlash) draft head on the frozen target: ``python -m specviz train-dflash``.

As train-eagle (specviz/training/heads.py): the target never trains, each batch's features are computed under no_grad from windows of
--block + 1 characters of the training split, AdamW with warmup and cosine decay, every step reseeded from
(seed, step) so that a run resumed from --resume-dir takes the same batches. Each window roots --roots
blocks at random entries (models/dflash.py: slot 1 is the root's own row, slots 2..K mask rows) and the
loss is the slot-weighted soft cross-entropy against the target's distributions.

Validation (the last 10%): ``slot_accuracy`` drafts one block greedily at the end of evenly spaced windows,
as the drafter does (one pass), and compares with the target's own greedy continuation: at depth d the
share of windows whose first d slots all equal the target's (what greedy verification accepts).
"""

import hashlib

import torch

from models.dflash import DFlashConfig, DFlashHead, load_dflash, save_dflash
from specviz.training import heads
from specviz.training.train_eagle import LAYERS


@torch.no_grad()
def slot_accuracy(head: DFlashHead, target, ids: torch.Tensor, windows: int = 256, block: int = 128,
                  batch: int = 64) -> dict:  # fmt: skip
    """Greedy acceptance by slot on ``ids``. -> {"cumulative": [d1..dK], "windows": n}"""

    def draft(ctx: torch.Tensor) -> torch.Tensor:  # (B, block) -> (B, K)
        feats, tokens = target.features(ctx[:, :-1], head.config.layers), ctx[:, 1:]  # entries 0..block-2
        h, hm = head.block_hidden(feats, tokens, torch.tensor([tokens.size(1) - 1]))  # one block at the root
        return head.logits(torch.cat([h[:, -1:], hm[:, 0]], dim=1)).argmax(-1)

    was = head.training
    head.eval()
    acc = heads.depth_accuracy(draft, target, ids, head.config.block, windows, block, batch)
    head.train(was)
    return {"cumulative": acc["cumulative"], "windows": windows}


def add_args(p) -> None:
    p.add_argument("--out", default="models/dflash.safetensors", help="the head to write (.safetensors)")
    p.add_argument("--slots", type=int, default=8, help="K_max: slots filled per pass (1..16)")
    p.add_argument("--roots", type=int, default=24, help="blocks rooted per window (random entries)")
    heads.add_head_args(p, max_iters=1500, batch_size=8, eval_interval=500)


def check_args(args, block_size: int) -> None:
    """ValueError, one sentence, for flags out of range (before any work)."""
    if not 1 <= args.slots <= 16:
        raise ValueError(f"--slots must be between 1 and 16, got {args.slots}")
    heads.check_head_args(args, 8 + args.slots, block_size - 1)
    if not 1 <= args.roots <= args.block - args.slots:
        raise ValueError(f"--roots must be between 1 and --block - --slots ({args.block - args.slots})")


def train(args, command: str) -> dict:
    torch.set_num_threads(args.threads)
    target, model, text, train_ids, val_ids = heads.frozen_target(args)
    c = model.config
    config = DFlashConfig(3, LAYERS[3], c.n_embd, c.n_head, c.vocab_size, 1, args.slots)
    head = DFlashHead(config).attach(model)
    opt, resume = heads.optimiser(head, args, "dflash", f" {args.roots}")
    T, K = args.block, args.slots

    def batch_loss(gen: torch.Generator):
        x = heads.batch_windows(train_ids, T + 1, args.batch_size, gen)  # (B, T+1)
        roots = torch.randperm(T - K + 1, generator=gen)[: args.roots].sort().values  # (R,) roots + K - 1 <= T - 1
        with torch.no_grad():
            feats = model.features(x, config.layers)  # (F, B, T+1, C), the frozen target
        return head.loss(feats[:, :, :T], x[:, 1:], feats[-1][:, 1:], roots)

    def quick_eval() -> str:
        acc = slot_accuracy(head, model, val_ids, windows=min(64, args.eval_windows), block=T)
        return f"val greedy acceptance by slot (64 windows) {acc['cumulative']}"

    metrics, elapsed = heads.fit(head, opt, args, resume, batch_loss, quick_eval)
    meta = {"command": command, "iterations": args.max_iters, "train_seconds": round(elapsed, 1),
            "threads": args.threads, "batch_size": args.batch_size, "block": T, "roots": args.roots,
            "seed": args.seed, "lr": args.lr, "final_losses": {k: round(v, 4) for k, v in metrics.items()},
            "corpus_sha256": hashlib.sha256(text.encode()).hexdigest(), "torch": torch.__version__}  # fmt: skip
    save_dflash(args.out, head, target.path, meta)
    # Measured after the float16 round trip: the accuracy of the file as shipped.
    meta["val_slot_accuracy"] = slot_accuracy(load_dflash(target, args.out), model, val_ids, windows=args.eval_windows)
    save_dflash(args.out, head, target.path, meta)
    resume.done()
    return meta
