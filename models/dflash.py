"""A parallel draft head after DFlash (Chen et al., 2026, "DFlash: Block Diffusion for Flash Speculative
Decoding"): one transformer block that fills a block of K slots in ONE pass, conditioned on the target's own
hidden features, so its cost does not grow with K.

It is the EAGLE-3 head's shape (models/eagle.py: fused low, middle and top features, fc, one Block, the
target's frozen ln_f and lm_head) with learned mask embeddings. Index the head's entries as EAGLE's:
entry i reads (g_i, x_{i+1}) (g the fused target features of position i) and its output predicts x_{i+2},
causal over the entries before it. A draft rooted at x_{r+1} (the context's last token) is a block of K slots:

    slot 1         entry r itself (the root's row, EAGLE's one-position shift): predicts x_{r+2}
    slot s >= 2    a mask row reading u_r + m_{s-1}, u_r = fc(g_r, wte(x_{r+1})) the root row's input
                   and m_{s-1} a learned mask embedding per slot; it attends to entries 0..r (the
                   context's, true features only) and to every mask row of its block (bidirectional,
                   as block diffusion denoises a block at once); it predicts x_{r+1+s}.

No mask row reads a drafted token: the slots are drawn independently, each from its own distribution q_s,
which is therefore the marginal over x_{r+1+s} given the context (one denoising step; DFlash's paper runs one
too). Training (specviz/training/train_dflash.py) is soft cross-entropy against the target's distribution at
each slot's position, every slot of blocks rooted at random entries of each window, later slots weighted
down by SLOT_DECAY per slot (a slot only counts once the slots before it were accepted).

A head file is paired with one target (its sha256 in the header), checked at load as the EAGLE heads are;
weights are float16 on disk.
"""

from dataclasses import dataclass

import torch
import torch.nn as nn

from models.eagle import MODELS_DIR, EagleConfig, EagleHead, load_head, save_head

DFLASH_FILE = MODELS_DIR / "dflash.safetensors"
SLOT_DECAY = 0.8  # the loss weight of slot s is SLOT_DECAY ** (s - 1)


@dataclass
class DFlashConfig(EagleConfig):
    block: int = 8  # K_max: slots filled per pass (the root's row and block - 1 mask rows)

    def __post_init__(self):
        super().__post_init__()
        if self.variant != 3 or self.ttt_steps != 1:
            raise ValueError("the DFlash head reads fused features (variant 3) and drafts in one step")
        if not 1 <= self.block <= 64:
            raise ValueError(f"block must be 1..64 slots, got {self.block}")


def block_mask(T: int, roots: torch.Tensor, m: int) -> torch.Tensor:
    """Which keys the mask rows see, over [T context entries | R blocks of m mask rows]: block b (rooted at
    entry roots[b]) sees entries 0..roots[b] and its own m rows. -> (R m, T + R m) bool"""
    R = roots.numel()
    ctx = (torch.arange(T)[None, :] <= roots[:, None]).repeat_interleave(m, dim=0)  # (R m, T)
    own = torch.block_diag(*[torch.ones(m, m, dtype=torch.bool)] * R)  # (R m, R m)
    return torch.cat([ctx, own], dim=1)


class DFlashHead(EagleHead):
    FORMAT, CONFIG, KIND, TRAIN = "specviz-dflash-1", DFlashConfig, "DFlash head", "train-dflash"

    def __init__(self, config: DFlashConfig):
        super().__init__(config)
        self.mask = nn.Parameter(0.02 * torch.randn(max(config.block - 1, 1), config.n_embd))  # (block - 1, C)

    def block_hidden(self, feats: torch.Tensor, tokens: torch.Tensor, roots: torch.Tensor):
        """Training forward. feats (F, B, T, C) at entries 0..T-1, tokens (B, T) the token each entry reads,
        roots (R,) the entries that root a block. -> (entry outputs (B, T, C): slot 1 of a block rooted
        there, mask outputs (B, R, block - 1, C): slots 2..block)"""
        g = self.fused(feats)  # (B, T, C)
        u = self.fc(torch.cat([g, self.frozen[0][tokens]], dim=-1))  # (B, T, C) the entries' inputs
        h, kv = self.h(u, None, None)  # causal over the context entries
        B, T, C = u.shape
        m = self.config.block - 1
        if m == 0:
            return h, h.new_zeros(B, roots.numel(), 0, C)
        rows = (u[:, roots, None, :] + self.mask).reshape(B, roots.numel() * m, C)  # (B, R m, C)
        out, _ = self.h(rows, kv, block_mask(T, roots, m).to(u.device))
        return h, out.view(B, roots.numel(), m, C)

    def loss(self, feats: torch.Tensor, tokens: torch.Tensor, next_top: torch.Tensor, roots: torch.Tensor,
             later: torch.Tensor | None = None):  # fmt: skip
        """feats (F, B, T, C), tokens (B, T), next_top (B, T, C) the target's top feature one position on
        (f_{i+1}, whose ln_f/lm_head give p_{i+1}, the target's distribution over x_{i+2}); roots (R,) with
        roots + block - 1 <= T; later (B, R, block - 1, V), optional: the labels of slots 2..block instead of
        the corpus positions' (the target's distributions along its own continuation from each root).
        -> (weighted CE summed over slots, {"ce<s>": float})"""
        h, hm = self.block_hidden(feats, tokens, roots)
        p = self.logits(next_top).softmax(-1)  # (B, T, V)
        ce1 = -(p * self.logits(h).log_softmax(-1)).sum(-1).mean()
        total, metrics = ce1, {"ce1": ce1.item()}
        for j in range(hm.size(2)):  # slot s = j + 2 predicts x_{r+1+s}: label p_{r+s-1+1} = p at entry r + j + 1
            label = p[:, roots + j + 1] if later is None else later[:, :, j].float()  # (B, R, V)
            ce = -(label * self.logits(hm[:, :, j]).log_softmax(-1)).sum(-1).mean()
            total = total + SLOT_DECAY ** (j + 1) * ce
            metrics[f"ce{j + 2}"] = ce.item()
        return total, metrics


def load_dflash(target, path=DFLASH_FILE) -> DFlashHead:
    """The shipped head (or ``path``) for this target Checkpoint: sha256 and target pairing checked,
    EagleError (one line) otherwise."""
    return load_head(str(path), target, cls=DFlashHead)


def save_dflash(path, head: DFlashHead, target_path, meta: dict) -> None:
    save_head(path, head, target_path, meta)
