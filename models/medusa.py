"""Medusa heads (Cai et al., 2024, arXiv 2401.10774): extra decoding heads on the frozen target's
top-layer feature, each guessing a token further ahead, trained by ``python -m specviz train-medusa``.

Indexing. Let h_t be the target's residual stream after its top block (layer n_layer - 1, the
input of ln_f) at position t, i.e. after it has read x_0..x_t. The target's own lm_head reads
ln_f(h_t) and predicts x_{t+1}. Head i (i = 1..H) reads the same h_t and predicts x_{t+1+i}: one
step further than the lm_head per head. In a speculative round the root (the context's last token,
already emitted) sits at the entry *after* the last committed cache entry t, and the root itself
was predicted from h_t. So head 1 on h_t guesses the root's child (draft depth 1), head i guesses
depth i, and the heads draft without any extra target pass: h_t was written into the cache by the
pass that verified the previous round (CachedModel.capture).

One head (Medusa-1's shape, with the base model's final norm in front):

    u      = ln_f(h_t)                    the target's own final LayerNorm, frozen
    z      = u + SiLU(W u + b)            one residual block; W = 0, b = 0 at init
    logits = z @ lm_head_i^T              (V,), lm_head_i initialised from the target's lm_head

Why ln_f first: Medusa's heads read the base model's last hidden state, which in the models it was
made for is already normalised, and the head's linear layer starts as a copy of the lm_head, which
was trained on ln_f's output. With W = 0 each head starts as exactly the target's next-token
prediction (a fair first guess for "the token after next" in text that repeats), instead of an
lm_head applied to an unnormalised residual stream whose scale it has never seen.

The file is models/medusa.safetensors: the heads' tensors and, in the header, the config, the
training metadata and the sha256 of the target they were trained on. Its own sha256 is in
models/SHA256SUMS and checked on load; heads paired with any other target are refused (MedusaError).
"""

import json
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import torch
import torch.nn as nn
from safetensors import SafetensorError, safe_open
from torch.nn import functional as F

from models.artifacts import ArtifactError, check_artifact, sha256

FORMAT = "specviz-medusa-1"
DEFAULT_PATH = Path(__file__).resolve().parent / "medusa.safetensors"


class MedusaError(Exception):
    """Heads that are missing, corrupt, or trained on another target. One line naming the file."""


@dataclass
class MedusaConfig:
    n_heads: int = 4  # H: head i predicts the token i + 1 steps after the feature's position
    n_embd: int = 256  # the target's width
    vocab_size: int = 65
    feature_layer: int = 3  # the target block whose output the heads read (the top one)


class MedusaHeads(nn.Module):
    def __init__(self, config: MedusaConfig):
        super().__init__()
        self.config = config
        C, V, H = config.n_embd, config.vocab_size, config.n_heads
        self.ln_f = nn.LayerNorm(C)  # a frozen copy of the target's ln_f (not trained, saved for pairing)
        self.c_fc = nn.ModuleList([nn.Linear(C, C) for _ in range(H)])  # the residual block's W, b
        self.lm_head = nn.ModuleList([nn.Linear(C, V, bias=False) for _ in range(H)])
        for fc in self.c_fc:
            nn.init.zeros_(fc.weight)  # Medusa-1: the block starts as the identity
            nn.init.zeros_(fc.bias)
        self.ln_f.requires_grad_(False)

    @classmethod
    def from_target(cls, target, n_heads: int) -> "MedusaHeads":
        """Fresh heads for a target GPT: ln_f copied, every lm_head_i a copy of the target's."""
        c = target.config
        heads = cls(MedusaConfig(n_heads, c.n_embd, c.vocab_size, c.n_layer - 1))
        heads.ln_f.load_state_dict(target.transformer.ln_f.state_dict())
        for lm in heads.lm_head:
            lm.weight.data.copy_(target.lm_head.weight.detach())
        return heads.to(target.lm_head.weight.dtype)

    def forward(self, h: torch.Tensor, n: int | None = None) -> torch.Tensor:
        """h: (..., C) the target's top-layer features; n: run heads 1..n only (None: all H; a
        one-level draft needs head 1 alone). -> (n, ..., V) logits; row i-1 is head i."""
        u = self.ln_f(h)  # (..., C)
        heads = list(zip(self.c_fc, self.lm_head, strict=True))[:n]
        return torch.stack([lm(u + F.silu(fc(u))) for fc, lm in heads])

    def trainable(self) -> list[nn.Parameter]:
        return [p for p in self.parameters() if p.requires_grad]


def save_heads(path: Path, heads: MedusaHeads, meta: dict) -> None:
    """Float32 tensors; the header holds one JSON key (config, target sha256, training metadata),
    so the same heads are always the same bytes."""
    from safetensors.torch import save_file

    from models.checkpoint import atomic_write

    tensors = {k: v.detach().float().contiguous() for k, v in heads.state_dict().items()}
    header = {"format": FORMAT, "config": asdict(heads.config), **meta}
    atomic_write(Path(path), lambda tmp: save_file(tensors, tmp, metadata={"meta": json.dumps(header)}))


def load_heads(path: Path, target_path: Path, dtype: torch.dtype = torch.float32) -> MedusaHeads:
    """The heads at ``path`` for the target checkpoint at ``target_path``; MedusaError (one line)
    when the file is missing, damaged, malformed, or trained on another target."""
    path = Path(path)
    if not path.is_file():
        raise MedusaError(f"Medusa heads not found: {path} (train them: python -m specviz train-medusa)")
    try:
        check_artifact(path)  # the shipped heads: sha256 in models/SHA256SUMS
        with safe_open(path, framework="pt") as f:
            meta = json.loads((f.metadata() or {}).get("meta", "{}"))
            if meta.get("format") != FORMAT:
                raise ValueError("not a specviz Medusa file")
            heads = MedusaHeads(MedusaConfig(**meta["config"]))
            want = heads.state_dict()
            if set(f.keys()) != set(want) or any(f.get_slice(k).get_shape() != list(v.shape) for k, v in want.items()):
                raise ValueError("its tensors do not match its config")
            heads.load_state_dict({k: f.get_tensor(k) for k in want})
    except (ArtifactError, SafetensorError, OSError, ValueError, KeyError, TypeError) as e:
        reason = " ".join(str(e).split()) or type(e).__name__
        raise MedusaError(f"cannot load Medusa heads {path}: {reason[:300]}") from None
    have = sha256(target_path)
    if meta.get("target_sha256") != have:
        raise MedusaError(f"{path.name} was trained on another target (sha256 {str(meta.get('target_sha256'))[:12]}…), "
                          f"not {Path(target_path).name}; retrain: python -m specviz train-medusa")  # fmt: skip
    heads.meta = meta
    return heads.to(dtype).eval().requires_grad_(False)


@lru_cache(maxsize=4)
def _load(path: Path, target_path: Path, dtype: torch.dtype, stamp: tuple) -> MedusaHeads:
    return load_heads(path, target_path, dtype)


def cached_heads(target_path: Path, dtype: torch.dtype, path: Path = DEFAULT_PATH) -> MedusaHeads:
    """The heads for this target, loaded once per process and dtype (read-only once loaded);
    again if either file changed."""
    path, target_path = Path(path).resolve(), Path(target_path).resolve()
    stamp = tuple((p.stat().st_size, p.stat().st_mtime) if p.is_file() else None for p in (path, target_path))
    return _load(path, target_path, dtype, stamp)
