"""The commands that build the shipped artifacts: model-card, export-hf, distill, train-medusa,
train-eagle, train-mtp, train-dflash and eagle-depth."""

import json
import shlex
import sys
from pathlib import Path

import torch

from models.checkpoint import atomic_write, checkpoint_header, load_checkpoint
from specviz.cli.errors import CLIError, checked
from specviz.core.outputs import writable_file, writable_folder
from specviz.training import distill, train_dflash, train_eagle, train_medusa, train_mtp
from specviz.training.model_card import render_card


def cmd_model_card(args) -> None:
    out = checked(writable_file, args.out)
    text = render_card()
    atomic_write(out, lambda tmp: Path(tmp).write_text(text))
    print(f"wrote {args.out}")


def cmd_export_hf(args) -> None:
    from specviz.training.export_hf import export_hf

    out = checked(writable_folder, args.dir)
    target = load_checkpoint(args.model)
    try:
        paths = export_hf(target, out)
    except (NotADirectoryError, FileExistsError, PermissionError) as e:
        raise CLIError(f"cannot write to {args.dir}: {e.strerror or e}") from None
    for p in paths:
        print(f"wrote {p}")


def cmd_distill(args) -> None:

    try:
        cfg = distill.config_from(args)
    except ValueError as e:
        raise CLIError(str(e)) from None
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    command = "python -m specviz " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    meta = distill.build(args.target, Path(args.data), Path(args.out), cfg, Path(args.resume_dir), command)
    print(f"wrote {args.out}: {meta['contexts']:,} contexts from {meta['train_chars']:,} characters "
          f"in {meta['build_seconds'] / 60:.1f} min")  # fmt: skip


def cmd_train_medusa(args) -> None:
    cfg = checked(train_medusa.config_from, args)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    command = "python -m specviz " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    meta = train_medusa.train(args, cfg, command)
    print(f"wrote {args.out}: {cfg.heads} heads in {meta['train_seconds'] / 60:.1f} min; val top-1 per head "
          f"{meta['val']['head_top1']} (the target's own next token: {meta['val']['target_top1']})")  # fmt: skip


def _train_head(module, args, key: str = "val_depth_accuracy", by: str = "depth") -> None:
    """train-eagle, train-mtp, train-dflash: check the flags against the target's header, train, say what was
    written and its validation accuracy (the meta's ``key``, by draft ``by``: depth or slot)."""
    config, _, _ = checkpoint_header(args.target)
    checked(module.check_args, args, config.block_size)
    command = "python -m specviz " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    meta = module.train(args, command)
    acc = meta[key]
    conditional = f"conditional {acc['conditional']}, " if "conditional" in acc else ""
    print(f"wrote {args.out} in {meta['train_seconds'] / 60:.1f} min; val greedy acceptance by {by} "
          f"1..{len(acc['cumulative'])}: {acc['cumulative']} ({conditional}{acc['windows']} windows)")  # fmt: skip


def cmd_train_eagle(args) -> None:
    _train_head(train_eagle, args)


def cmd_train_mtp(args) -> None:
    _train_head(train_mtp, args)


def cmd_train_dflash(args) -> None:
    _train_head(train_dflash, args, "val_slot_accuracy", "slot")


def cmd_eagle_depth(args) -> None:
    from specviz.training.eagle_depth import depth_acceptance, validation_prompts

    if not 1 <= args.prompts <= 100 or not 1 <= args.max_new_tokens <= 1024 or not 1 <= args.k <= 8:
        raise CLIError("--prompts must be 1..100, --max-new-tokens 1..1024 and --k 1..8")
    if not Path(args.data).is_file():
        raise CLIError(f"corpus not found: {args.data}")
    if args.out:
        checked(writable_file, args.out)
    torch.set_num_threads(1)
    target, tiny = load_checkpoint("target"), load_checkpoint("tiny")
    prompts = validation_prompts(target.tokenizer, Path(args.data), args.prompts)
    measured = {str(t): depth_acceptance(target, prompts, tiny.model, t, args.k, args.max_new_tokens, args.seed)
                for t in (0.0, 0.8)}  # fmt: skip
    result = {"conditions": f"{args.prompts} validation prompts of 96 characters, {args.max_new_tokens} new "
                            f"characters each, K = {args.k}, seed {args.seed}, lossless verification",
              "command": "python -m specviz " + " ".join(shlex.quote(a) for a in sys.argv[1:]), "measured": measured}  # fmt: skip
    text = json.dumps(result, indent=1)
    if args.out:
        atomic_write(Path(args.out), lambda tmp: Path(tmp).write_text(text + "\n"))
    print(text)
