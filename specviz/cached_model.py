"""A model together with the KV cache of a prefix of the context, and the context-window policy.

The cache always holds the context minus its last token (the token a round starts from). Past
block_size every decoder shares one policy: the token at index t is predicted from
context[window_start(t):t], the window jumping forward by half a block at a time. The window
depends only on t, never on K or on the drafter, so temperature-0 outputs are identical for the
baseline and every drafter; a round never spans a window jump (see ``room``).
"""

import torch

from models.gpt import GPT, KVCache


def window_start(t: int, block_size: int) -> int:
    """First context index seen when predicting the token at index t."""
    if t <= block_size:
        return 0
    half = block_size // 2
    return half * -(-(t - block_size) // half)  # ceil to a multiple of half a block


def room(t: int, block_size: int) -> int:
    """How many tokens past index t can be predicted in the same window as token t."""
    s = window_start(t, block_size)
    return s + block_size - t


class CachedModel:
    def __init__(self, model: GPT):
        self.model = model
        self.block_size = model.config.block_size
        self.device = next(model.parameters()).device
        self.cache: KVCache | None = None
        self.start = 0  # window start of the cache
        self.cached: list[int] = []  # the tokens the cache holds

    @property
    def length(self) -> int:
        return len(self.cached)

    @torch.no_grad()
    def forward(self, tokens: list[int], positions: list[int], attn_mask=None):
        """Run ``tokens`` after the cache without committing: (T, V) logits and the grown cache."""
        idx = torch.tensor([tokens], device=self.device)
        pos = torch.tensor(positions, device=self.device)
        logits, cache = self.model(idx, pos, self.cache, attn_mask)
        return logits[0], cache

    def commit(self, cache: KVCache | None, tokens: list[int]) -> None:
        assert cache is None or cache.length == len(tokens)
        self.cache, self.cached = cache, tokens

    def sync(self, context: list[int]) -> bool:
        """Make the cache hold context[s:-1] for this context's window start s, reusing the
        longest common prefix (trimming what the last round rejected). True if the window
        moved and the cache was rebuilt (a re-prefill)."""
        moved = self.trim_to(context)
        want = context[self.start : -1]
        if len(want) > self.length:
            _, cache = self.forward(want[self.length :], list(range(self.length, len(want))))
            self.commit(cache, want)
        return moved

    def next_logits(self, context: list[int]) -> torch.Tensor:
        """Logits for the token after ``context`` (the cache then holds all of it): one forward
        pass over whatever the cache lacks, the last token included. (V,)"""
        self.trim_to(context)
        seen = context[self.start :]
        logits, cache = self.forward(seen[self.length :], list(range(self.length, len(seen))))
        self.commit(cache, seen)
        return logits[-1]

    def trim_to(self, context: list[int]) -> bool:
        """Keep only the longest common prefix of the cache and context[s:-1] (nothing if the
        window start s moved; then True). Feeds nothing."""
        s = window_start(len(context), self.block_size)
        moved = s != self.start
        if moved:
            self.commit(None, [])
            self.start = s
        keep = 0
        for a, b in zip(self.cached, context[s:-1], strict=False):
            if a != b:
                break
            keep += 1
        if keep < len(self.cached):
            self.commit(self.cache.trim(keep) if keep else None, self.cached[:keep])
        return moved
