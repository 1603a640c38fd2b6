"""A character-level GPT in nanoGPT's shape, with an explicit KV cache and tree attention.

The layer names are GPT-2's (wte, wpe, h.N.ln_1, h.N.attn.c_attn, ...), so the weights map
one to one onto transformers' GPT2LMHeadModel. Two things are added on top of nanoGPT:

- ``forward(idx, pos, past_kvs, attn_mask)`` takes the positions explicitly and returns the
  logits of *every* input position plus the grown cache. Speculative verification needs the
  target's distribution after each draft token, all from one forward pass.
- ``attn_mask`` (bool, True = may attend) over [cache + new tokens]: with it a whole token tree
  is verified in one pass (each node sees the cache, its ancestors and itself).
"""

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F


@dataclass
class GPTConfig:
    block_size: int = 256  # largest position id + 1
    vocab_size: int = 65
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 256
    dropout: float = 0.0


class PositionError(ValueError):
    """A position id outside [0, block_size): the model has no embedding for it."""

    @classmethod
    def check(cls, lo: int, hi: int, block_size: int) -> None:
        """Raise for a pass whose positions run from ``lo`` to ``hi`` outside the window."""
        if lo < 0 or hi >= block_size:
            raise cls(f"position {hi if hi >= block_size else lo} is outside the model's context window "
                      f"(block_size {block_size}: positions 0..{block_size - 1})")  # fmt: skip


@dataclass(frozen=True)
class KVCache:
    """Keys and values of every layer for the tokens seen so far. Immutable: every operation
    returns a new cache, so a cache recorded in a round can be shown later unchanged."""

    layers: tuple  # one (k, v) per layer, each (B, nh, T, hs)

    @property
    def length(self) -> int:
        return self.layers[0][0].size(2)

    def trim(self, length: int) -> "KVCache":
        """Keep the first ``length`` entries: what is left after a chain's rejected tail."""
        if not 0 <= length <= self.length:
            raise ValueError(f"cannot trim a cache of length {self.length} to {length}")
        return KVCache(tuple((k[:, :, :length], v[:, :, :length]) for k, v in self.layers))

    def gather(self, indices) -> "KVCache":
        """Keep the entries at ``indices``, in that order: the accepted path of a tree."""
        idx = torch.as_tensor(indices, dtype=torch.long, device=self.layers[0][0].device)
        if idx.numel() and (idx.min() < 0 or idx.max() >= self.length):
            raise ValueError(f"gather indices out of range for a cache of length {self.length}")
        return KVCache(tuple((k.index_select(2, idx), v.index_select(2, idx)) for k, v in self.layers))


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)  # q, k, v for all heads
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)
        self.attn_dropout = config.dropout
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd

    def forward(self, x, past_kv, attn_mask):
        B, T, C = x.size()  # batch, new tokens, n_embd
        hs = C // self.n_head
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        if past_kv is not None:
            k = torch.cat([past_kv[0], k], dim=2)  # (B, nh, P+T, hs)
            v = torch.cat([past_kv[1], v], dim=2)  # (B, nh, P+T, hs)
        # The plain causal case (training, prefill) takes the fused is_causal path.
        is_causal = attn_mask is None and past_kv is None and T > 1
        if attn_mask is None or self.training:
            y = F.scaled_dot_product_attention(
                q,
                k,
                v,
                attn_mask=attn_mask,
                dropout_p=self.attn_dropout if self.training else 0.0,
                is_causal=is_causal,
            )  # (B, nh, T, hs)
        else:
            # Drafts after a cache need a mask, and with one torch's CPU attention falls back to a
            # generic kernel that is slower than the same math written out.
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))  # (B, nh, T, P+T)
            att = att.masked_fill(~attn_mask, float("-inf")).softmax(dim=-1)
            y = att @ v  # (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y)), (k, v)


class MLP(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = MLP(config)

    def forward(self, x, past_kv, attn_mask):
        a, kv = self.attn(self.ln_1(x), past_kv, attn_mask)
        x = x + a
        x = x + self.mlp(self.ln_2(x))
        return x, kv


def state_shapes(config: GPTConfig) -> dict[str, tuple[int, ...]]:
    """The shape of every tensor in ``GPT(config).state_dict()``, without building it: a header's config
    may name a model too large to allocate, and building one on the meta device imports torch's
    compiler (its normal_ runs through torch._dynamo: ~1.2 s of the app's first start).
    tests/unit/test_model.py holds it equal to a real GPT's."""
    C, V = config.n_embd, config.vocab_size
    block = {"ln_1.weight": (C,), "ln_1.bias": (C,), "attn.c_attn.weight": (3 * C, C), "attn.c_attn.bias": (3 * C,),
             "attn.c_proj.weight": (C, C), "attn.c_proj.bias": (C,), "ln_2.weight": (C,), "ln_2.bias": (C,),
             "mlp.c_fc.weight": (4 * C, C), "mlp.c_fc.bias": (4 * C,), "mlp.c_proj.weight": (C, 4 * C),
             "mlp.c_proj.bias": (C,)}  # fmt: skip
    shapes = {"transformer.wte.weight": (V, C), "transformer.wpe.weight": (config.block_size, C)}
    shapes |= {f"transformer.h.{i}.{name}": shape for i in range(config.n_layer) for name, shape in block.items()}
    return shapes | {"transformer.ln_f.weight": (C,), "transformer.ln_f.bias": (C,), "lm_head.weight": (V, C)}


class GPT(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(
            dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd),
                wpe=nn.Embedding(config.block_size, config.n_embd),
                drop=nn.Dropout(config.dropout),
                h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
                ln_f=nn.LayerNorm(config.n_embd),
            )
        )
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying, as in GPT-2
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):  # GPT-2's scaled init of residual projections
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())  # lm_head is tied, counted once

    def forward(self, idx, pos, past_kvs: KVCache | None = None, attn_mask=None):
        """Logits for every input position and the cache grown by the new tokens.

        idx: (B, T) token ids. pos: (T,) or (B, T) position ids.
        attn_mask: optional bool (T, P+T) or (B, T, P+T) over [cache + new tokens], True = may
        attend. Without it the new tokens see the whole cache and attend causally among
        themselves.
        """
        B, T = idx.size()
        P = 0 if past_kvs is None else past_kvs.length
        pos = torch.as_tensor(pos, dtype=torch.long, device=idx.device)
        if pos.shape[-1] != T:
            raise ValueError(f"got {T} tokens but {pos.shape[-1]} position ids")
        lo, hi = (int(p) for p in pos.aminmax()) if pos.numel() else (0, 0)  # one op, not four
        PositionError.check(lo, hi, self.config.block_size)
        if attn_mask is None and P > 0 and T > 1:
            attn_mask = torch.ones(T, P + T, dtype=torch.bool, device=idx.device).tril(P)
        if attn_mask is not None:
            if attn_mask.dtype != torch.bool or attn_mask.shape[-2:] != (T, P + T):
                raise ValueError(f"attn_mask must be bool with last dims ({T}, {P + T})")
            attn_mask = attn_mask.unsqueeze(-3)  # (B or 1, 1, T, P+T): same mask for every head

        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))  # (B, T, C)
        kvs = []
        for i, block in enumerate(self.transformer.h):
            x, kv = block(x, None if past_kvs is None else past_kvs.layers[i], attn_mask)
            kvs.append(kv)
        logits = self.lm_head(self.transformer.ln_f(x))  # (B, T, vocab_size)
        return logits, KVCache(tuple(kvs))

    def features(self, idx, layers: tuple[int, ...]) -> torch.Tensor:
        """The residual stream after each block in ``layers`` (0-based; n_layer - 1 is the top, the
        input of ln_f), causal, no cache: what the EAGLE and Medusa heads read, for training them.
        idx: (B, T). -> (len(layers), B, T, C)"""
        T = idx.size(1)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(torch.arange(T, device=idx.device)))
        out = []
        for i, block in enumerate(self.transformer.h[: max(layers) + 1]):
            x, _ = block(x, None, None)  # (B, T, C)
            if i in layers:
                out.append(x)
        return torch.stack(out)  # (len(layers), B, T, C)
