"""Shipped checkpoints: one safetensors file each, holding the weights, the raw bigram and
trigram counts of the training split, and (in the header) the config, vocabulary and training
metadata. safetensors cannot run code on load, so a checkpoint is safe to open."""

import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from models.gpt import GPT, GPTConfig
from models.tokenizer import CharTokenizer

MODELS_DIR = Path(__file__).resolve().parent
CHECKPOINT_NAMES = ("target", "tiny")
TIED = "lm_head.weight"  # tied to transformer.wte.weight: stored once


class CheckpointError(Exception):
    """A checkpoint that is missing, truncated or corrupt. The message is one line naming the file."""


@dataclass
class Checkpoint:
    name: str
    path: Path
    model: GPT  # eval mode; never mutate a loaded model, it is shared by every session
    tokenizer: CharTokenizer
    meta: dict  # training metadata: iterations, losses, seed, corpus sha256, command, ...
    bigram_counts: torch.Tensor  # (V, V) counts[a, b] of "ab" in the training split
    trigram_counts: torch.Tensor  # (V, V, V) counts[a, b, c] of "abc" in the training split

    @property
    def config(self) -> GPTConfig:
        return self.model.config


def checkpoint_path(name: str) -> Path:
    """Where a shipped checkpoint lives; a path to a .safetensors file passes through."""
    if name in CHECKPOINT_NAMES:
        return MODELS_DIR / f"{name}.safetensors"
    return Path(name)


def ngram_counts(ids: torch.Tensor, vocab_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Raw bigram and trigram counts of a token sequence; drafters smooth them themselves."""
    V = vocab_size
    ids = ids.long()
    bigram = torch.bincount(ids[:-1] * V + ids[1:], minlength=V * V).view(V, V)
    trigram = torch.bincount((ids[:-2] * V + ids[1:-1]) * V + ids[2:], minlength=V**3).view(V, V, V)
    return bigram.to(torch.int32), trigram.to(torch.int32)


def atomic_write(path: Path, write) -> None:
    """Call ``write(tmp_path)`` then rename over ``path``: a crash never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a checkpoint is meant to be shared
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def save_checkpoint(path, model: GPT, tokenizer: CharTokenizer, meta: dict, bigram, trigram) -> None:
    tensors = {k: v.detach().to("cpu", torch.float32).contiguous() for k, v in model.state_dict().items() if k != TIED}
    tensors["counts.bigram"] = bigram.to(torch.int32).contiguous()
    tensors["counts.trigram"] = trigram.to(torch.int32).contiguous()
    header = {
        "format": "specviz-checkpoint-1",
        "config": json.dumps(asdict(model.config)),
        "vocab": json.dumps(tokenizer.chars),
        "meta": json.dumps(meta),
    }
    atomic_write(path, lambda tmp: save_file(tensors, tmp, metadata=header))


def load_checkpoint(name_or_path: str | Path, dtype: torch.dtype = torch.float32) -> Checkpoint:
    """Load a checkpoint by name ('target', 'tiny') or path. Raises CheckpointError, one line."""
    path = checkpoint_path(str(name_or_path))
    if not path.is_file():
        raise CheckpointError(f"checkpoint not found: {path}")
    try:
        with safe_open(path, framework="pt") as f:
            header = f.metadata() or {}
            tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open is not iterable)
        if header.get("format") != "specviz-checkpoint-1":
            raise ValueError("not a specviz checkpoint")
        config = GPTConfig(**json.loads(header["config"]))
        tokenizer = CharTokenizer(json.loads(header["vocab"]))
        meta = json.loads(header["meta"])
        bigram = tensors.pop("counts.bigram")
        trigram = tensors.pop("counts.trigram")
        V = config.vocab_size
        if tokenizer.vocab_size != V or bigram.shape != (V, V) or trigram.shape != (V, V, V):
            raise ValueError("vocabulary and counts do not match the config")
        model = GPT(config)
        tensors[TIED] = tensors["transformer.wte.weight"]
        model.load_state_dict(tensors, strict=True)
    except (SafetensorError, OSError, ValueError, KeyError, TypeError, RuntimeError) as e:
        reason = " ".join(str(e).split()) or type(e).__name__
        raise CheckpointError(f"cannot load checkpoint {path}: {reason[:300]}") from None
    model.to(dtype).eval()
    name = path.stem if path.parent == MODELS_DIR else str(path)
    return Checkpoint(name, path, model, tokenizer, meta, bigram, trigram)
