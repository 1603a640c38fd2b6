"""EAGLE draft heads: one transformer block that drafts from the target's own hidden features.

EAGLE-1 (Li et al. 2024, arXiv 2401.15077). Call f_t the target's top feature at position t (the
residual stream after its last block, ln_f's input). The target's next-token distribution is
lm_head(ln_f(f_t)), so predicting f_{t+1} is as good as predicting the token after x_{t+1} — and
features are smoother to extrapolate than tokens. But f_{t+1} depends on x_{t+1}, which a sampled
draft fixes only at random; so the head reads both:

    input at entry t   concat(f_t, wte(x_{t+1}))          (2C)  -> fc -> C
    one Block          causal attention over the head's earlier entries
    output             f̂_{t+1}; logits = lm_head(ln_f(f̂_{t+1})), the target's own frozen head
    loss               smoothL1(f̂_{t+1}, f_{t+1}) + w * CE(p_{t+1}, softmax(logits)),  w = 0.1

p_{t+1} is the target's distribution (the soft label: acceptance is about matching the target, not
the corpus). Drafting step j >= 1 has no true feature, so it feeds its own prediction f̂ back.

EAGLE-3 (Li et al. 2025, arXiv 2503.01840) drops the feature loss: the head's output hidden state
only has to predict the next token (CE), so it is free to carry whatever helps the next step. It
reads low, middle and top features, fused: g_t = fuse(concat(f^0_t, f^1_t, f^3_t)) (3C -> C), with
the blocks (0, 1, 3) of this 4-layer target. Why 1 and not 2 for the middle: the residual stream
only accumulates, so the feature after block 2 is the nearest to the top one and adds the least that
block 3 does not already hold (train-eagle prints the cosine similarities it measured). At step j >= 1
the fused target features are unknown, so the head feeds its own output hidden state h in place of g.

Training-time test (EAGLE-3's TTT): train the head on its own fed-back states, as at inference.
Index the head's entries by i: entry i reads (g_i, x_{i+1}) and predicts x_{i+2}. A draft rooted at
x_{r+1} (the last context token) reads true features up to entry r, then step s = 1, 2, ... puts its
entry at index r + s, reading (h_{s-1}[r+s-1], x̂_{r+s+1}). So step j's entry at index i (draft root
after entry i - j) reads g_j[i] = h_{j-1}[i-1] (the previous step's output one index back) and
attends to: step 0's entries 0..i-j (true features), and for s = 1..j, step s's entry at i-j+s (its
own chain, itself included). Unrolling every index at once is then one pass per step, whose keys are
all earlier steps' keys plus its own, with that "diagonal" mask (``ttt_mask``). The label of step j's
entry i is the same as step 0's: p_{i+1}; only the conditioning differs. Indices i < j have no draft
of that depth (their fed-back state would come from before the window) and are left out of the loss.
The tokens fed at j >= 1 are the data's (teacher forcing): a draft token only matters once accepted.
No position embedding: the target's features carry the position, and the head's own states inherit it.
EAGLE-1 here trains step 0 only (as the paper, without its feature noise); so does "eagle3-nottt".

A head file is paired with one target: its header records the target's sha256, and it is refused
with any other (EagleError, one line). Weights are stored in float16 (half the file; measured
accuracy is taken after the round trip) and loaded into the target's dtype.
"""

from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn as nn
from torch.nn import functional as F

from models.gpt import GPT, Block, GPTConfig
from models.paired import load_paired, save_paired

FORMAT = "specviz-eagle-1"
MODELS_DIR = Path(__file__).resolve().parent
HEAD_NAMES = {
    "eagle1": "eagle1.safetensors",
    "eagle3": "eagle3.safetensors",
    "eagle3-nottt": "eagle3-nottt.safetensors",
}
FEATURE_WEIGHT_CE = 0.1  # EAGLE-1's w: the token loss beside the feature regression


class EagleError(Exception):
    """A head that is missing, corrupt, or made for another target. One line naming the file."""


@dataclass
class EagleConfig:
    variant: int = 3  # 1: EAGLE-1 (top feature, feature regression); 3: EAGLE-3 (fused features, CE only)
    layers: tuple[int, ...] = (0, 1, 3)  # the target blocks read (EAGLE-1: (3,), the top)
    n_embd: int = 256  # C, the target's width
    n_head: int = 4
    vocab_size: int = 65
    ttt_steps: int = 4  # steps unrolled in training (1 = no training-time test)

    def __post_init__(self):
        self.layers = tuple(self.layers)
        if self.variant not in (1, 3):
            raise ValueError(f"variant must be 1 or 3, got {self.variant}")
        if self.variant == 1 and len(self.layers) != 1:
            raise ValueError("EAGLE-1 reads one feature: the top layer's")


def ttt_mask(T: int, j: int) -> torch.Tensor:
    """Training-time test: which keys step j's entries see, over [step 0 | step 1 | ... | step j]
    (T entries each). Row i sees step 0's entries 0..i-j and step s's entry i-j+s (s = 1..j).
    -> (T, (j+1) T) bool"""
    i = torch.arange(T)
    mask = torch.zeros(T, j + 1, T, dtype=torch.bool)
    mask[:, 0] = i[None, :] <= (i - j)[:, None]  # step 0: the true-feature entries up to the root
    for s in range(1, j + 1):
        col = i - j + s
        ok = col >= 0
        mask[i[ok], s, col[ok]] = True  # its own chain: one entry per step
    return mask.view(T, (j + 1) * T)


class EagleHead(nn.Module):
    # How its file is told apart and named in errors; a head built on this one (models/dflash.py) sets its own.
    FORMAT, CONFIG, KIND, TRAIN = FORMAT, EagleConfig, "EAGLE head", "train-eagle"

    def __init__(self, config: EagleConfig):
        super().__init__()
        self.config = config
        C = config.n_embd
        if config.variant == 3:
            self.fuse = nn.Linear(len(config.layers) * C, C)  # low, mid, top features -> one
        self.fc = nn.Linear(2 * C, C)  # (feature, token embedding) -> the block's input
        self.h = Block(GPTConfig(n_embd=C, n_head=config.n_head, vocab_size=config.vocab_size))
        self.frozen = None  # the target's (wte, ln_f weight, ln_f bias, lm_head); see attach

    def attach(self, target: GPT) -> "EagleHead":
        """Borrow the target's token embedding, final layer norm and lm_head, frozen, as plain
        tensors: never trained, never saved with the head."""
        t = target.transformer
        self.frozen = tuple(p.detach() for p in (t.wte.weight, t.ln_f.weight, t.ln_f.bias, target.lm_head.weight))
        return self

    def fused(self, feats: torch.Tensor) -> torch.Tensor:
        """g from the target's features (F, ..., C): the top one (EAGLE-1) or their fusion. -> (..., C)"""
        if self.config.variant == 1:
            return feats[-1]
        return self.fuse(torch.cat(list(feats), dim=-1))

    def step(self, g: torch.Tensor, tokens: torch.Tensor, past_kv=None, attn_mask=None):
        """One head pass: entries reading (g, x) after ``past_kv``. g: (B, T, C), tokens: (B, T).
        -> hidden (B, T, C), the block's (k, v) over past + new"""
        x = self.fc(torch.cat([g, self.frozen[0][tokens]], dim=-1))  # (B, T, C)
        return self.h(x, past_kv, attn_mask)

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        wte, w, b, lm_head = self.frozen
        return F.layer_norm(h, (h.size(-1),), w, b) @ lm_head.t()  # (..., V)

    def unroll(self, feats: torch.Tensor, tokens: torch.Tensor, steps: int) -> list[torch.Tensor]:
        """Training forward with training-time test. feats: (F, B, T, C) at entries 0..T-1, tokens:
        (B, T) the token each entry reads (x_{i+1}). -> one (B, T, C) hidden per step (see the docstring)"""
        g = self.fused(feats)  # (B, T, C)
        T = tokens.size(1)
        hs, kv = [], None
        for j in range(steps):
            mask = None if j == 0 else ttt_mask(T, j).to(g.device)
            h, kv = self.step(g, tokens, kv, mask)  # kv grows by T keys per step
            hs.append(h)
            g = F.pad(h[:, :-1], (0, 0, 1, 0))  # step j+1 at i reads step j's output at i-1
        return hs

    def loss(self, feats: torch.Tensor, tokens: torch.Tensor, next_top: torch.Tensor, steps: int):
        """feats (F, B, T, C) at entries 0..T-1, tokens (B, T) the token each entry reads,
        next_top (B, T, C) the target's top feature one position on (f_{i+1}): the feature label,
        and through the frozen ln_f/lm_head the soft token label p_{i+1}. -> (loss, {metric: float})"""
        hs = self.unroll(feats, tokens, steps)
        p = self.logits(next_top).softmax(-1)  # (B, T, V) the target's distribution over x_{i+2}
        total, metrics = 0.0, {}
        for j, h in enumerate(hs):
            logp = self.logits(h[:, j:]).log_softmax(-1)  # entries i >= j have a draft of depth j+1
            ce = -(p[:, j:] * logp).sum(-1).mean()
            metrics[f"ce{j + 1}"] = ce.item()
            if self.config.variant == 1:
                reg = F.smooth_l1_loss(h[:, j:], next_top[:, j:])
                total = total + reg + FEATURE_WEIGHT_CE * ce
                metrics[f"feature{j + 1}"] = reg.item()
            else:
                total = total + ce
        return total, metrics


def head_path(name: str) -> Path:
    return MODELS_DIR / HEAD_NAMES[name] if name in HEAD_NAMES else Path(name)


def save_head(path, head: EagleHead, target_path, meta: dict) -> None:
    save_paired(path, head, head.FORMAT, target_path, meta)


def load_head(name: str, target, cls: type[EagleHead] = EagleHead) -> EagleHead:
    """The head ``name`` (eagle1, eagle3, eagle3-nottt, or a path) for this target Checkpoint,
    attached to it, in its dtype, eval mode; ``cls`` the head's class (its FORMAT, CONFIG and names).
    Raises EagleError, one line."""
    make = lambda config: cls(cls.CONFIG(**config))  # noqa: E731
    return load_paired(head_path(name), target, cls.FORMAT, make, EagleError, cls.KIND, cls.TRAIN).attach(target.model)
