"""The target model as the engine and the drafters see it: ``TargetModel``, the seam between the
speculative-decoding logic and a model implementation, and the context-window policy every target shares.

The engine verifies a draft with ``forward`` and commits what it accepted with ``keep``; the drafters that
draft from the target itself (layer-skip, Medusa, EAGLE) read its cache, its features and its first layers
through the same few members, never its weights or buffers. ``CachedModel`` (specviz/kernels/cached_model.py,
the lean pass over the character-level nanoGPT) implements it; an implementation over a Hugging Face
transformers model is the next step. A Protocol, so an implementation needs no base class and a call costs
what it costs on the class itself: the round loop is hot.

The cache holds a prefix of context[start:-1] (the context minus the token a round starts from), entry i
holding context[start + i] at position i; a forward writes its keys and values after the committed entries
as scratch, and ``keep`` commits some of them. Tokens are ids; how they read as text is the tokenizer's
business (``pieces``), never the target's.
"""

from typing import Protocol

import torch


def window_start(t: int, block_size: int) -> int:
    """First context index seen when predicting the token at index t. Past block_size the window jumps
    forward by half a block at a time, and depends only on t (never on K or the drafter), so greedy
    outputs are identical for the baseline and every drafter."""
    if t <= block_size:
        return 0
    half = block_size // 2
    return half * -(-(t - block_size) // half)  # ceil to a multiple of half a block


def room(t: int, block_size: int) -> int:
    """How many tokens past index t can be predicted in the same window as token t (a round never spans a jump)."""
    s = window_start(t, block_size)
    return s + block_size - t


class TargetModel(Protocol):
    """The target with its KV cache: every member used outside its implementation (the engine, the drafters,
    the exactness lab's shared prefill, the memory bench)."""

    block_size: int  # the context window: positions 0..block_size-1 (window_start, room)
    vocab_size: int  # V, the width of a row of logits (a draft head must match it)
    n_layer: int  # transformer blocks (layer-skip drafts with fewer; capture names them 0..n_layer-1)
    n_embd: int  # C, the width of a feature and a hidden state (a draft head must match it)
    dtype: torch.dtype  # of logits, features and hidden states (a draft head's buffers and masks follow it)
    start: int  # the cache's window start: entry i holds context[start + i]

    @property
    def length(self) -> int:
        """Committed cache entries: the next forward writes after them."""

    def forward(self, tokens: list[int], positions: list[int], tree_mask: torch.Tensor | None = None,
                logits: bool = True, skip: int = 0) -> torch.Tensor | None:  # fmt: skip
        """Verify: rows after the cache, scratch until keep; mask True = may attend, None causal. ``skip``: the
        first rows whose logits nobody reads (a prefill round's context) get none. (T, T) -> (T - skip, V)"""

    def keep(self, new: list[int], tokens: list[int]) -> None:
        """Commit the last forward's rows ``new`` (a chain's prefix, a tree's path) that hold ``tokens``."""

    def trim_missing(self, context: list[int]) -> tuple[bool, list[int]]:
        """Trim to the longest common prefix with context[s:-1]. -> (window moved, what the verify pass prefills)"""

    def sync(self, context: list[int]) -> bool:
        """trim_missing and its prefill: the cache holds context[s:-1], for a drafter to read. -> window moved"""

    def copy_from(self, other: "TargetModel") -> None:
        """Take another cache's committed entries (same model): one prompt's prefill shared by many runs."""

    def capture(self, layers: tuple[int, ...]) -> None:
        """Keep, per entry, the residual stream after these blocks (a draft head's features). Before any forward."""

    def features(self, start: int, stop: int) -> torch.Tensor:
        """Captured features of entries start..stop-1, kept along the accepted path. -> (F, stop - start, C)"""

    def first_layers(self, tokens: list[int], positions: list[int], at: int, n_layers: int) -> torch.Tensor:
        """Layer-skip's draft: the first n_layers blocks only, writing scratch at entries at.. (T,) -> (T, C)"""

    def head(self, x: torch.Tensor) -> torch.Tensor:
        """Final norm and lm_head: hidden states to logits (layer-skip's early exit). (T, C) -> (T, V)"""

    def held(self) -> tuple:
        """Its model, weights and buffers: what a drafter shares with plain decoding (drafter_megabytes)."""
