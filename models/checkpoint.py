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

from models.artifacts import ArtifactError, check_artifact, record_artifact
from models.gpt import GPT, GPTConfig, state_shapes
from models.tokenizer import CharTokenizer

MODELS_DIR = Path(__file__).resolve().parent
CHECKPOINT_NAMES = ("target", "tiny")
TIED = "lm_head.weight"  # tied to transformer.wte.weight: stored once


class CheckpointError(Exception):
    """A checkpoint that is missing, truncated or corrupt. The message is one line naming the file."""


# The config's schema: every GPTConfig field, its type and its allowed range. A checkpoint from
# a user path has no recorded hash, so this is what stands between its header and torch.
CONFIG_SCHEMA = {
    "block_size": (int, 1, 65_536),
    "vocab_size": (int, 1, 65_536),
    "n_layer": (int, 1, 256),
    "n_head": (int, 1, 1024),
    "n_embd": (int, 1, 65_536),
    "dropout": (float, 0.0, 1.0),
}


def check_config(config) -> GPTConfig:
    """A GPTConfig from a header's config object, or ValueError naming the field at fault."""
    if not isinstance(config, dict):
        raise ValueError("config is not an object")
    unknown, missing = set(config) - set(CONFIG_SCHEMA), set(CONFIG_SCHEMA) - set(config)
    if unknown or missing:
        raise ValueError(f"config fields: unknown {sorted(unknown)}, missing {sorted(missing)}")
    for name, (kind, lo, hi) in CONFIG_SCHEMA.items():
        value = config[name]
        ok_type = isinstance(value, int | float) if kind is float else isinstance(value, int)
        if isinstance(value, bool) or not ok_type or not lo <= value <= hi:
            raise ValueError(f"config {name}={str(value)[:40]} must be {kind.__name__} in [{lo}, {hi}]")
    if config["n_embd"] % config["n_head"]:
        raise ValueError(f"config n_head={config['n_head']} does not divide n_embd={config['n_embd']}")
    return GPTConfig(**config)


@dataclass
class Checkpoint:
    name: str
    path: Path
    model: GPT  # eval mode; never mutate a loaded model, it is shared by every session
    tokenizer: CharTokenizer
    meta: dict  # training metadata: iterations, losses, seed, corpus sha256, command, ...
    bigram_counts: torch.Tensor  # (V, V) counts[a, b] of "ab" in the training split
    trigram_counts: torch.Tensor  # (V, V, V) counts[a, b, c] of "abc" in the training split
    bpe = False  # one token per character (a real model's LLMCheckpoint says True: specviz/llm/load.py)

    @property
    def config(self) -> GPTConfig:
        return self.model.config

    def target_model(self):
        """The model with a fresh KV cache, as the engine drives it (specviz.core.target.TargetModel)."""
        from specviz.kernels.cached_model import CachedModel  # the kernels import this module's model

        return CachedModel(self.model)


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
    record_artifact(path)


def _reason(e: Exception) -> str:
    return (" ".join(str(e).split()) or type(e).__name__)[:200]


def read_header(path: Path) -> tuple[GPTConfig, CharTokenizer, dict]:
    """(config, tokenizer, meta) from a checkpoint's header, validated, without reading a tensor:
    cheap enough to check every checkpoint a command names before any work starts."""
    try:
        with safe_open(path, framework="pt") as f:
            header = f.metadata() or {}
        if header.get("format") != "specviz-checkpoint-1":
            raise ValueError("not a specviz checkpoint")
        config = check_config(json.loads(header["config"]))
        vocab, meta = json.loads(header["vocab"]), json.loads(header["meta"])
        if not isinstance(vocab, str) or not isinstance(meta, dict):
            raise ValueError("vocab must be a string and meta an object")
        tokenizer = CharTokenizer(vocab)
        if tokenizer.vocab_size != config.vocab_size:
            raise ValueError(f"the vocabulary has {tokenizer.vocab_size} characters, the config {config.vocab_size}")
    except (SafetensorError, OSError, ValueError, KeyError, TypeError) as e:
        raise CheckpointError(f"cannot load checkpoint {path}: {_reason(e)}") from None
    return config, tokenizer, meta


def checkpoint_header(name_or_path: str | Path) -> tuple[GPTConfig, CharTokenizer, dict]:
    """read_header by name or path, after the file's existence and recorded sha256 are checked."""
    path = checkpoint_path(str(name_or_path))
    try:
        if not path.is_file():
            raise CheckpointError(f"checkpoint not found: {str(path)[:200]}")
        check_artifact(path)
    except ArtifactError as e:
        raise CheckpointError(str(e)) from None
    except OSError as e:  # a name too long, a loop of links
        raise CheckpointError(f"cannot open checkpoint {str(path)[:200]}: {e.strerror or e}") from None
    return read_header(path)


def load_checkpoint(name_or_path: str | Path, dtype: torch.dtype = torch.float32) -> Checkpoint:
    """Load a checkpoint by name ('target', 'tiny') or path. Raises CheckpointError, one line.

    Order: the recorded sha256 (shipped files), the header's schema, the tensors' names and
    shapes against the config (computed from it, models.gpt.state_shapes: no memory), and only then the
    weights."""
    path = checkpoint_path(str(name_or_path))
    config, tokenizer, meta = checkpoint_header(path)
    V = config.vocab_size
    try:
        shapes = {k: v for k, v in state_shapes(config).items() if k != TIED}
        shapes |= {"counts.bigram": (V, V), "counts.trigram": (V, V, V)}
        with safe_open(path, framework="pt") as f:
            found = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}  # noqa: SIM118 (not iterable)
            if found != shapes:
                wrong = sorted(k for k in shapes.keys() | found.keys() if shapes.get(k) != found.get(k))
                raise ValueError(f"tensors do not match the config: {', '.join(wrong)[:120]}")
            tensors = {k: f.get_tensor(k) for k in found}
        bigram = tensors.pop("counts.bigram")
        trigram = tensors.pop("counts.trigram")
        model = GPT(config)
        tensors[TIED] = tensors["transformer.wte.weight"]
        model.load_state_dict(tensors, strict=True)
    except (SafetensorError, OSError, ValueError, KeyError, TypeError, RuntimeError) as e:
        raise CheckpointError(f"cannot load checkpoint {path}: {_reason(e)}") from None
    model.to(dtype).eval()
    name = path.stem if path.parent == MODELS_DIR else str(path)
    return Checkpoint(name, path, model, tokenizer, meta, bigram, trigram)
