"""Train a character-level GPT on any text file: ``python -m specviz.training.train --data FILE --out CKPT``.

nanoGPT's recipe: random block_size windows, AdamW, linear warmup then cosine decay, train/val
split 90/10 (val = the last 10%). The checkpoint and a resume state are written atomically at
every evaluation, so an interrupted run continues with ``--resume``. Every step reseeds from
(seed, step), which makes a resumed run take the same batches as an uninterrupted one.
"""

import argparse
import hashlib
import math
import shlex
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch
from torch.nn import functional as F
from tqdm import tqdm

from models.checkpoint import atomic_write, ngram_counts, save_checkpoint
from models.gpt import GPT, GPTConfig
from models.tokenizer import CharTokenizer


def split(ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """nanoGPT's convention: the first 90% trains, the last 10% validates."""
    n = int(0.9 * len(ids))
    return ids[:n], ids[n:]


@torch.no_grad()
def evaluate(model: GPT, ids: torch.Tensor, batch_size: int = 32, max_windows: int | None = None) -> float:
    """Mean next-token cross-entropy over non-overlapping block_size windows of ``ids``:
    deterministic, so a checkpoint's recorded loss can be reproduced exactly."""
    was_training = model.training
    model.eval()
    T = model.config.block_size
    device = next(model.parameters()).device
    n_windows = max(1, (len(ids) - 1) // T)
    if max_windows is not None:
        n_windows = min(n_windows, max_windows)
    starts = torch.arange(n_windows) * T
    total, count = 0.0, 0
    for i in range(0, n_windows, batch_size):
        s = starts[i : i + batch_size]
        width = min(T, len(ids) - 1 - int(s[-1]))
        x = torch.stack([ids[j : j + width] for j in s.tolist()]).to(device)  # (B, T)
        y = torch.stack([ids[j + 1 : j + 1 + width] for j in s.tolist()]).to(device)  # (B, T)
        logits, _ = model(x, torch.arange(width, device=device))
        total += F.cross_entropy(logits.flatten(0, 1).float(), y.flatten(), reduction="sum").item()
        count += y.numel()
    model.train(was_training)
    return total / count


def get_batch(ids: torch.Tensor, block_size: int, batch_size: int, gen: torch.Generator, device):
    ix = torch.randint(len(ids) - block_size - 1, (batch_size,), generator=gen)
    x = torch.stack([ids[i : i + block_size] for i in ix.tolist()])  # (B, T)
    y = torch.stack([ids[i + 1 : i + 1 + block_size] for i in ix.tolist()])  # (B, T)
    return x.to(device), y.to(device)


def learning_rate(it: int, args) -> float:
    if it < args.warmup_iters:
        return args.lr * (it + 1) / (args.warmup_iters + 1)
    if it >= args.lr_decay_iters:
        return args.min_lr
    ratio = (it - args.warmup_iters) / max(1, args.lr_decay_iters - args.warmup_iters)
    return args.min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (args.lr - args.min_lr)


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m specviz.training.train", description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True, help="training text file (e.g. ../shared/data/tinyshakespeare.txt)")
    p.add_argument("--out", required=True, help="checkpoint to write (.safetensors)")
    p.add_argument("--n-layer", type=int, default=4)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--n-embd", type=int, default=256)
    p.add_argument("--block-size", type=int, default=256)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--max-iters", type=int, default=5000)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--min-lr", type=float, default=1e-4)
    p.add_argument("--warmup-iters", type=int, default=100)
    p.add_argument("--lr-decay-iters", type=int, default=None, help="defaults to --max-iters")
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--eval-interval", type=int, default=250)
    p.add_argument("--eval-iters", type=int, default=50, help="random batches per progress estimate")
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    p.add_argument(
        "--autocast",
        choices=["none", "bfloat16"],
        default="none",
        help="mixed-precision training (weights stay float32)",
    )
    p.add_argument("--resume", action="store_true", help="continue from OUT's resume state")
    args = p.parse_args(argv)
    if args.lr_decay_iters is None:
        args.lr_decay_iters = args.max_iters
    return args


class HeadResume:
    """The resume state of a draft head trained on the frozen target (train_eagle, train_medusa): the
    head's and the optimiser's state, the iteration and the time spent, written atomically; tensors
    and numbers only, loaded with weights_only (runs no code)."""

    def __init__(self, path: Path, module: torch.nn.Module, opt: torch.optim.Optimizer):
        self.path, self.module, self.opt = Path(path), module, opt

    def load(self, what: str) -> tuple[int, float]:
        """(iteration to start at, seconds already spent): (0, 0.0) with no saved state."""
        if not self.path.is_file():
            return 0, 0.0
        state = torch.load(self.path, weights_only=True)
        self.module.load_state_dict(state["module"])
        self.opt.load_state_dict(state["optimizer"])
        print(f"resuming {what} at iteration {state['iter']} from {self.path}", file=sys.stderr)
        return state["iter"], state["elapsed_s"]

    def save(self, it: int, elapsed: float) -> None:
        state = {"module": self.module.state_dict(), "optimizer": self.opt.state_dict(), "iter": it,
                 "elapsed_s": elapsed}  # fmt: skip
        atomic_write(self.path, lambda tmp: torch.save(state, tmp))

    def done(self) -> None:
        """The run finished: its state is not needed any more."""
        self.path.unlink(missing_ok=True)


def resume_path(out: Path) -> Path:
    return out.with_suffix(".resume.pt")


def train(args, command: str) -> dict:
    out = Path(args.out)
    raw = Path(args.data).read_bytes()
    text = raw.decode("utf-8")
    tokenizer = CharTokenizer.from_text(text)
    ids = torch.tensor(tokenizer.encode(text), dtype=torch.long)
    train_ids, val_ids = split(ids)
    if len(val_ids) <= args.block_size + 1:
        raise SystemExit(
            f"error: {args.data} is too short for block_size {args.block_size} (val split {len(val_ids)} chars)"
        )
    config = GPTConfig(args.block_size, tokenizer.vocab_size, args.n_layer, args.n_head, args.n_embd, args.dropout)

    torch.manual_seed(args.seed)
    model = GPT(config).to(args.device)
    decay = [p for p in model.parameters() if p.dim() >= 2]  # matrices and embeddings decay
    no_decay = [p for p in model.parameters() if p.dim() < 2]  # biases and LayerNorm gains do not
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=args.lr,
        betas=(0.9, 0.99),
    )
    start, elapsed = 0, 0.0
    if args.resume and resume_path(out).exists():
        state = torch.load(resume_path(out), map_location=args.device, weights_only=True)
        if state["config"] != asdict(config):
            raise SystemExit(f"error: {resume_path(out)} was made with another model config")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        start, elapsed = state["iter"], state["elapsed_s"]
        print(f"resuming {out} at iteration {start}", file=sys.stderr)
    bigram, trigram = ngram_counts(train_ids, tokenizer.vocab_size)

    def checkpoint(it: int, final: bool) -> dict:
        losses = {"train_loss": evaluate(model, train_ids), "val_loss": evaluate(model, val_ids)} if final else {}
        meta = {
            "iterations": it,
            **losses,
            "seed": args.seed,
            "corpus": Path(args.data).name,
            "corpus_sha256": hashlib.sha256(raw).hexdigest(),
            "corpus_chars": len(text),
            "command": command,
            "device": args.device,
            "torch": torch.__version__,
            "train_seconds": round(elapsed, 1),
            "hyperparameters": {k: v for k, v in vars(args).items() if k not in ("data", "out", "resume", "device")},
        }
        state = {
            "model": model.state_dict(),
            "optimizer": opt.state_dict(),
            "iter": it,
            "elapsed_s": elapsed,
            "config": asdict(config),
        }
        atomic_write(resume_path(out), lambda tmp: torch.save(state, tmp))
        save_checkpoint(out, model, tokenizer, meta, bigram, trigram)
        return meta

    model.train()
    bar = tqdm(
        range(start, args.max_iters), initial=start, total=args.max_iters, desc=f"training {out.name}", unit="it"
    )
    it = start
    try:
        for it in bar:
            t0 = time.perf_counter()
            torch.manual_seed(args.seed * 1_000_003 + it)  # dropout masks depend on (seed, step) only
            gen = torch.Generator().manual_seed(args.seed * 1_000_003 + it)
            for group in opt.param_groups:
                group["lr"] = learning_rate(it, args)
            x, y = get_batch(train_ids, args.block_size, args.batch_size, gen, args.device)
            with torch.autocast(
                torch.device(args.device).type, dtype=torch.bfloat16, enabled=args.autocast == "bfloat16"
            ):
                logits, _ = model(x, torch.arange(args.block_size, device=args.device))
            loss = F.cross_entropy(logits.flatten(0, 1).float(), y.flatten())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            elapsed += time.perf_counter() - t0
            bar.set_postfix(loss=f"{loss.item():.3f}")
            if (it + 1) % args.eval_interval == 0 and it + 1 < args.max_iters:
                val = evaluate(model, val_ids, max_windows=args.eval_iters)
                bar.write(
                    f"iter {it + 1}: train batch loss {loss.item():.4f}, val loss (first {args.eval_iters} windows) {val:.4f}"
                )
                checkpoint(it + 1, final=False)
    except KeyboardInterrupt:
        bar.close()
        checkpoint(it, final=False)
        print(f"\ninterrupted at iteration {it}; state saved. Continue with:\n  {command} --resume", file=sys.stderr)
        raise SystemExit(130) from None
    bar.close()
    meta = checkpoint(args.max_iters, final=True)
    print(
        f"wrote {out}: {model.num_params():,} parameters, train loss {meta['train_loss']:.4f}, val loss {meta['val_loss']:.4f}"
    )
    return meta


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if not Path(args.data).is_file():
        raise SystemExit(f"error: training text not found: {args.data}")
    command = "python -m specviz.training.train " + shlex.join([a for a in argv if a != "--resume"])
    train(args, command)


if __name__ == "__main__":
    main()
