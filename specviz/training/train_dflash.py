"""Train the parallel (DFlash) draft head on the frozen target: ``python -m specviz train-dflash``.

As train-eagle (specviz/training/heads.py): the target never trains, each batch's features are computed under no_grad from windows of
--block + 1 characters of the training split, AdamW with warmup and cosine decay, every step reseeded from
(seed, step) so that a run resumed from --resume-dir takes the same batches. Each window roots --roots
blocks at random entries (models/dflash.py: slot 1 is the root's own row, slots 2..K mask rows) and the
loss is the slot-weighted soft cross-entropy against the target's distributions.

--labels picks what slots 2..K learn. ``corpus``: the target's distribution at the corpus positions r + 2..
(teacher-forced on the corpus text, so a later slot learns a spread-out average over what the CORPUS does
next). ``target``: self-distillation, the target's distribution along its OWN greedy continuation from each
root (slot s: p(. | context, y_1..y_{s-1}), y the target's argmaxes), which is what greedy verification
accepts. Those labels take K - 1 cached target passes per batch (all roots of a window at once, each row
seeing its window up to its root and its own continuation); they are computed once for every step of the
run and kept under --resume-dir, keyed by the target's sha256 and the run's settings. --init starts from a
head file (fine-tuning) instead of fresh weights.

Validation (the last 10%): ``slot_accuracy`` drafts one block greedily at the end of evenly spaced windows,
as the drafter does (one pass), and compares with the target's own greedy continuation: at depth d the
share of windows whose first d slots all equal the target's (what greedy verification accepts).
"""

import hashlib
import json
import sys
from pathlib import Path

import torch
from safetensors import safe_open
from tqdm import tqdm

from models.artifacts import sha256
from models.checkpoint import atomic_write
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
    p.add_argument("--labels", choices=("corpus", "target"), default="corpus",
                   help="slots 2..K learn the target's distributions at the corpus positions (corpus) or along "
                        "the target's own greedy continuation from each root (target: self-distillation)")  # fmt: skip
    p.add_argument("--init", default=None, help="start from this head file (.safetensors) instead of fresh weights")
    heads.add_head_args(p, max_iters=1500, batch_size=8, eval_interval=500)


def check_args(args, block_size: int) -> None:
    """ValueError, one sentence, for flags out of range (before any work)."""
    if not 1 <= args.slots <= 16:
        raise ValueError(f"--slots must be between 1 and 16, got {args.slots}")
    heads.check_head_args(args, 8 + args.slots, block_size - 1)
    if not 1 <= args.roots <= args.block - args.slots:
        raise ValueError(f"--roots must be between 1 and --block - --slots ({args.block - args.slots})")
    if args.init is not None:
        if not Path(args.init).is_file():
            raise ValueError(f"--init head not found: {args.init}")
        with safe_open(args.init, framework="pt") as f:
            block = json.loads((f.metadata() or {}).get("config", "{}")).get("block")
        if block != args.slots:
            raise ValueError(f"--init head fills {block} slots, not --slots {args.slots}")


@torch.no_grad()
def continuation_labels(model, x: torch.Tensor, roots: torch.Tensor, slots: int) -> torch.Tensor:
    """The target's distributions along its own greedy continuation from each root: a window x (B, L) is
    prefilled once, then step j feeds every root's y_j at once (R rows, position r + 1 + j), each row seeing
    its window up to the root's token x_{r+1} and its own y_1..y_j. -> (B, R, slots - 1, V) float16, row
    j - 1 = p(x_{r+2+j} | x_{<=r+1}, y_1..y_j): slot j + 1's label"""
    B, L = x.shape
    R, out = roots.numel(), []
    logits, kv = model(x, torch.arange(L))
    y = logits[:, roots + 1].argmax(-1)  # (B, R) y_1, slot 1's greedy token
    ctx = torch.arange(L)[None, :] <= roots[:, None] + 1  # (R, L)
    eye = torch.eye(R, dtype=torch.bool)
    for j in range(1, slots):
        mask = torch.cat([ctx, eye.repeat(1, j)], dim=1)  # (R, L + R j): its window part and its own rows
        logits, kv = model(y, roots + 1 + j, kv, mask)  # (B, R, V)
        out.append(logits.softmax(-1).half())
        y = logits.argmax(-1)
    return torch.stack(out, dim=2) if out else x.new_zeros(B, R, 0, model.config.vocab_size).half()


def train(args, command: str) -> dict:
    torch.set_num_threads(args.threads)
    target, model, text, train_ids, val_ids = heads.frozen_target(args)
    c = model.config
    config = DFlashConfig(3, LAYERS[3], c.n_embd, c.n_head, c.vocab_size, 1, args.slots)
    head = DFlashHead(config).attach(model)
    init = None
    if args.init is not None:
        start = load_dflash(target, args.init)
        head.load_state_dict(start.state_dict())
        # where the weights began, for the model card: the run that trained them
        init = {"path": args.init, "sha256": sha256(args.init), "labels": start.meta.get("labels", "corpus")}
        init |= {k: start.meta.get(k) for k in ("command", "iterations", "train_seconds")}
    opt, resume = heads.optimiser(head, args, "dflash", f" {args.roots} {args.labels} {args.init}")
    T, K = args.block, args.slots

    def windows(gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        x = heads.batch_windows(train_ids, T + 1, args.batch_size, gen)  # (B, T+1)
        roots = torch.randperm(T - K + 1, generator=gen)[: args.roots].sort().values  # (R,) roots + K - 1 <= T - 1
        return x, roots

    later = target_labels(args, target, model, train_ids, windows) if args.labels == "target" else None

    def batch_loss(gen: torch.Generator):
        x, roots = windows(gen)
        it = gen.initial_seed() - args.seed * 1_000_003  # the step fit() seeded gen for
        with torch.no_grad():
            feats = model.features(x, config.layers)  # (F, B, T+1, C), the frozen target
        return head.loss(feats[:, :, :T], x[:, 1:], feats[-1][:, 1:], roots, None if later is None else later[it])

    def quick_eval() -> str:
        acc = slot_accuracy(head, model, val_ids, windows=min(64, args.eval_windows), block=T)
        return f"val greedy acceptance by slot (64 windows) {acc['cumulative']}"

    metrics, elapsed = heads.fit(head, opt, args, resume, batch_loss, quick_eval)
    meta = {"command": command, "iterations": args.max_iters, "train_seconds": round(elapsed, 1),
            "threads": args.threads, "batch_size": args.batch_size, "block": T, "roots": args.roots,
            "labels": args.labels, "init": init,
            "seed": args.seed, "lr": args.lr, "final_losses": {k: round(v, 4) for k, v in metrics.items()},
            "corpus_sha256": hashlib.sha256(text.encode()).hexdigest(), "torch": torch.__version__}  # fmt: skip
    save_dflash(args.out, head, target.path, meta)
    # Measured after the float16 round trip: the accuracy of the file as shipped.
    meta["val_slot_accuracy"] = slot_accuracy(load_dflash(target, args.out), model, val_ids, windows=args.eval_windows)
    save_dflash(args.out, head, target.path, meta)
    resume.done()
    return meta


def target_labels(args, target, model, train_ids: torch.Tensor, windows) -> torch.Tensor:
    """continuation_labels for every step's batch (the batches fit() will draw, from the same seeds), computed
    once and kept under --resume-dir keyed by the target's sha256 and the settings that pick the batches.
    -> (max_iters, B, R, K - 1, V) float16"""
    sha = hashlib.sha256(Path(target.path).read_bytes()).hexdigest()
    corpus = hashlib.sha256(train_ids.numpy().tobytes()).hexdigest()
    key = hashlib.sha256(f"{corpus} {args.max_iters} {args.batch_size} {args.block} {args.roots} {args.slots} "
                         f"{args.seed}".encode()).hexdigest()[:16]  # fmt: skip
    path = Path(args.resume_dir) / f"labels-dflash-{sha[:16]}-{key}.pt"  # kept: not a resume state (dflash-*)
    if path.is_file():
        state = torch.load(path, weights_only=True)
        if state["target_sha256"] == sha:
            return state["labels"]
    out = []
    for it in tqdm(range(args.max_iters), desc="target continuations", unit="batch", file=sys.stderr):
        x, roots = windows(torch.Generator().manual_seed(args.seed * 1_000_003 + it))
        out.append(continuation_labels(model, x, roots, args.slots))
    labels = torch.stack(out)
    atomic_write(path, lambda tmp: torch.save({"target_sha256": sha, "labels": labels}, tmp))
    return labels
