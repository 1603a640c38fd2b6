"""Multi-token prediction (MTP) modules as draft heads: DeepSeek-V3's design (DeepSeek-AI, 2024,
arXiv 2412.19437, section 2.2), trained here on the frozen target.

Call h^0_i the target's top feature at position i (the residual stream after its last block, ln_f's
input) and t_i the token there. There are D modules, one per depth. Module k (k = 1..D) reads the
previous depth's state at the same position and the embedding of the token k steps on:

    input at entry i   proj(concat(RMSNorm(h^{k-1}_i), RMSNorm(wte(t_{i+k}))))     (2C) -> C
    one Block          causal attention over module k's own entries 0..i
    output             h^k_i; logits = lm_head(ln_f(h^k_i)) predict t_{i+k+1}

wte, ln_f and lm_head are the target's own, frozen and shared by every module. So module 1 at the
last cached position (the token before the root) reads the root's embedding and predicts the root's
child (draft depth 1); module k there reads depth k - 1's state and the token drafted at depth k - 1,
and predicts depth k. Unlike EAGLE, whose one head is applied again at every step (its own output
fed back), each depth has its own weights, and module k's entries stay at the positions of the
target's tokens: its entry i always reads t_{i+k}, the token k steps on. There is no module past D,
so a draft is at most D tokens deep.

Training. DeepSeek trains the modules together with the model: the MTP loss (their mean CE over
depths, weighted by lambda) flows into the trunk too, so the trunk learns features that plan ahead,
and the labels are the corpus's tokens. Here the target is frozen: h^0 is whatever the target learnt
for its next token alone, the modules must extract what they can from it, and nothing in the target
changes. Since a draft only has to match the target, each module's label is the target's own
distribution over t_{i+k+1} (soft labels, read from the target's logits at position i + k), not the
corpus's token. Teacher forcing throughout: module k's entries read the data's tokens and module
k - 1's states over the same window, as at inference when the earlier draft tokens were right; the
gradient of module k's loss reaches modules 1..k - 1 through h^{k-1}, as in DeepSeek.

The file is models/mtp.safetensors: the modules' tensors (float16; the measured accuracy is taken
after the round trip) and, in the header, the config, the training metadata and the sha256 of the
target they were trained on. Its own sha256 is in models/SHA256SUMS and checked on load; modules
paired with any other target are refused (MTPError, one line).
"""

from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn as nn
from torch.nn import functional as F

from models.gpt import GPT, Block, GPTConfig
from models.paired import load_paired, save_paired

FORMAT = "specviz-mtp-1"
DEFAULT_PATH = Path(__file__).resolve().parent / "mtp.safetensors"
RMS_EPS = 1e-6


class MTPError(Exception):
    """Modules that are missing, corrupt, or trained on another target. One line naming the file."""


@dataclass
class MTPConfig:
    depth: int = 4  # D: module k drafts depth k, so no draft is deeper than D
    n_embd: int = 256  # C, the target's width
    n_head: int = 4  # each module's block's attention heads
    vocab_size: int = 65


def rms_norm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """RMSNorm (DeepSeek's norm): x / rms(x) * weight, over the last dimension. (..., C) -> (..., C)"""
    return F.rms_norm(x, (x.size(-1),), weight, RMS_EPS)


class MTPModule(nn.Module):
    """One depth: two RMSNorms, the 2C -> C projection and one transformer block."""

    def __init__(self, config: MTPConfig):
        super().__init__()
        C = config.n_embd
        self.hnorm = nn.Parameter(torch.ones(C))  # RMSNorm gain on h^{k-1}
        self.enorm = nn.Parameter(torch.ones(C))  # RMSNorm gain on the token's embedding
        self.proj = nn.Linear(2 * C, C)  # (C + C) -> C
        self.block = Block(GPTConfig(n_embd=C, n_head=config.n_head, vocab_size=config.vocab_size))

    def forward(self, h: torch.Tensor, emb: torch.Tensor, past_kv=None, attn_mask=None):
        """h (B, T, C) the previous depth's states, emb (B, T, C) the embeddings of the tokens k on.
        -> (B, T, C) this depth's states, the block's (k, v) over past + new"""
        x = self.proj(torch.cat([rms_norm(h, self.hnorm), rms_norm(emb, self.enorm)], dim=-1))
        return self.block(x, past_kv, attn_mask)


class MTPHeads(nn.Module):
    def __init__(self, config: MTPConfig):
        super().__init__()
        self.config = config
        self.mods = nn.ModuleList([MTPModule(config) for _ in range(config.depth)])
        self.frozen = None  # the target's (wte, ln_f weight, ln_f bias, lm_head); see attach

    def attach(self, target: GPT) -> "MTPHeads":
        """Borrow the target's token embedding, final layer norm and lm_head, frozen, as plain tensors:
        shared by every module, never trained, never saved with them."""
        t = target.transformer
        self.frozen = tuple(p.detach() for p in (t.wte.weight, t.ln_f.weight, t.ln_f.bias, target.lm_head.weight))
        return self

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        wte, w, b, lm_head = self.frozen
        return F.layer_norm(h, (h.size(-1),), w, b) @ lm_head.t()  # (..., V)

    def unroll(self, h0: torch.Tensor, tokens: torch.Tensor, depth: int | None = None) -> list[torch.Tensor]:
        """Teacher-forced states of modules 1..depth, no cache. h0 (B, P, C): the target's top features at
        positions 0..P-1; tokens (B, L): the tokens at positions 0..L-1. Module k's entry i reads h^{k-1}_i
        and t_{i+k}, so it has entries 0..min(P, L-k)-1 (training: L = P, L - k entries; drafting after a
        context whose root sits at position P, L = P + k: P entries, the last the one that drafts depth k).
        -> [h^k (B, n_k, C) for k = 1..depth]"""
        L, h, out = tokens.size(1), h0, []
        for k, mod in enumerate(self.mods[: depth or self.config.depth], start=1):
            n = min(h.size(1), L - k)
            h, _ = mod(h[:, :n], self.frozen[0][tokens[:, k : k + n]])  # (B, n, C)
            out.append(h)
        return out

    def loss(self, h0: torch.Tensor, tokens: torch.Tensor) -> tuple[torch.Tensor, dict]:
        """Mean over depths of the cross-entropy from the target's distribution over t_{i+k+1} (read
        from its logits at position i + k) to module k's. -> (loss, {"ce<k>": float})"""
        p = self.logits(h0).softmax(-1)  # (B, L, V): p[:, j] is the target's distribution over t_{j+1}
        total, metrics = 0.0, {}
        for k, h in enumerate(self.unroll(h0, tokens), start=1):
            n = h.size(1)
            ce = -(p[:, k : k + n] * self.logits(h).log_softmax(-1)).sum(-1).mean()
            metrics[f"ce{k}"] = ce.item()
            total = total + ce / self.config.depth
        return total, metrics


def save_mtp(path, heads: MTPHeads, target_path, meta: dict) -> None:
    save_paired(path, heads, FORMAT, target_path, meta)


def load_mtp(path, target) -> MTPHeads:
    """The modules at ``path`` for this target Checkpoint, attached to it, in its dtype, eval mode, frozen.
    Raises MTPError, one line, when the file is missing, damaged, malformed or made for another target."""
    make = lambda config: MTPHeads(MTPConfig(**config))  # noqa: E731
    heads = load_paired(Path(path), target, FORMAT, make, MTPError, "MTP modules", "train-mtp")
    return heads.requires_grad_(False).attach(target.model)
