"""A model with the KV cache of a prefix of the context, and the lean forward pass that every round
runs: ``CachedModel``, the nanoGPT's implementation of the target interface (specviz/core/target.py).

The cache always holds the context minus its last token (the token a round starts from). Past
block_size every decoder shares one policy (window_start and room, in specviz/core/target.py): the
token at index t is predicted from context[window_start(t):t], the window jumping forward by half a
block at a time. The window depends only on t, never on K or on the drafter, so temperature-0
outputs are identical for the baseline and every drafter; a round never spans a window jump (see
``room``).

Why a second forward pass beside models/gpt.py? On a CPU a one-token step of a 3M-parameter model
is dominated by Python, module dispatch and torch.cat on the cache, not by arithmetic. This one
computes the same numbers (tests/unit/test_cached_model.py pins it to GPT.forward: float64 within 1e-10)
with no nn.Module calls, a cache preallocated once and written in place, and two kernels of its own:
the products (specviz/kernels/linear.py: each weight read once for all the rows of a pass) and attention
(specviz/kernels/attention.py: a layer's in one call). Every step of a row is row by row, so a verify pass's
logits for a token are bit for bit a one-token pass's (tests/unit/test_cached_model.py).

A forward writes its keys and values *after* the committed entries, as scratch (``extend`` appends
more after it: a draft tree grown one depth per pass); ``keep`` then commits the accepted ones (a
chain's prefix stays where it is; a tree's path is gathered into place). GPT stays the readable
reference; nothing here mutates it.
"""

import weakref

import torch
from torch.nn import functional as F

from models.gpt import GPT, PositionError
from specviz.core.target import window_start
from specviz.kernels.attention import attend, attn_bias
from specviz.kernels.linear import Linear


class LeanWeights:
    """A GPT's weights laid out for the lean pass: its linear layers as specviz.kernels.linear.Linear, the rest
    contiguous. Copies, so the shared model is never touched."""

    def __init__(self, model: GPT):
        t = model.transformer
        c = lambda p: p.detach().clone().contiguous()  # noqa: E731
        self.wte, self.wpe = c(t.wte.weight), c(t.wpe.weight)  # (V, C), (block_size, C)
        self.layers = [block_weights(b) for b in t.h]
        self.ln_f = (c(t.ln_f.weight), c(t.ln_f.bias))
        # lm_head (no bias: a zero one) on the kernel too, so that a row's logits, like the rest of its pass,
        # do not depend on the rows beside it (matmul takes a matrix-vector path for one row)
        self.lm_head = Linear(model.lm_head.weight, torch.zeros(model.lm_head.out_features, dtype=self.wte.dtype))
        self.params = list(model.parameters())  # walked once: model.parameters() costs ~0.2 ms a call
        self.versions = _versions(self.params)


def block_weights(b) -> tuple:
    """One GPT Block's weights for ``lean_block``, copied (the target's blocks, and the EAGLE head's)."""
    c = lambda p: p.detach().clone().contiguous()  # noqa: E731
    return (c(b.ln_1.weight), c(b.ln_1.bias), Linear.of(b.attn.c_attn), Linear.of(b.attn.c_proj),
            c(b.ln_2.weight), c(b.ln_2.bias), Linear.of(b.mlp.c_fc), Linear.of(b.mlp.c_proj))  # fmt: skip


def lean_block(x: torch.Tensor, w: tuple, K: torch.Tensor, V: torch.Tensor, P: int, bias, n_head: int,
               out: torch.Tensor | None = None, keys_only: int = 0) -> torch.Tensor:  # fmt: skip
    """One GPT Block over x (T, C), without nn.Module calls: its keys and values are written into
    K, V (nh, capacity, hs) at entries P..P+T-1, and it attends to entries 0..P+T-1 as ``bias``
    (attn_bias, (T, P+T)) allows; None: causal (a prefill, a chain after the cache, one token).
    ``out``: where to write the result (a feature buffer's rows), instead of a new tensor.
    ``keys_only``: the first rows stop after attention, for a one-block head whose output at them nobody
    reads (its context entries before the root): their keys and values are written, their projection and MLP
    (3/4 of a row's work) skipped. -> (T - keys_only, C) the residual stream after the block"""
    if keys_only:
        return block_with(x, w, lambda qkv: attend(qkv, K, V, P, bias, n_head)[keys_only:], out)
    return block_with(x, w, lambda qkv: attend(qkv, K, V, P, bias, n_head), out)


def block_with(x: torch.Tensor, w: tuple, attention, out: torch.Tensor | None = None) -> torch.Tensor:
    """``lean_block`` with its attention given: ``attention`` (T, 3C) -> (R, C) takes the rows' queries, keys
    and values (one cache's: lean_block; several sequences', each to its own cache: specviz/kernels/batched.py)
    and returns the last R rows' (R = T but for lean_block's keys_only). Every other step is row by row.
    -> (R, C)"""
    ln1_w, ln1_b, c_attn, attn_proj, ln2_w, ln2_b, c_fc, mlp_proj = w
    C = x.size(1)
    y = attention(c_attn(F.layer_norm(x, (C,), ln1_w, ln1_b)))  # (R, C)
    if y.size(0) < x.size(0):  # lean_block's keys_only rows: their residual stream ends here
        x = x[x.size(0) - y.size(0) :]
    x = x + attn_proj(y)
    h = F.gelu(c_fc(F.layer_norm(x, (C,), ln2_w, ln2_b)))  # (R, 4C)
    return torch.add(x, mlp_proj(h), out=out)


def _versions(params: list) -> tuple:
    return tuple(p._version for p in params)  # bumped by every in-place change


_WEIGHTS: "weakref.WeakKeyDictionary[GPT, LeanWeights]" = weakref.WeakKeyDictionary()


def lean_weights(model: GPT) -> LeanWeights:
    """One LeanWeights per model, made again only if the model's parameters changed (training)."""
    w = _WEIGHTS.get(model)
    if w is None or w.versions != _versions(w.params):
        w = _WEIGHTS[model] = LeanWeights(model)
    return w


class CachedModel:
    """A GPT with its KV cache, run by the lean pass. Implements specviz.core.target.TargetModel (the
    engine's and the drafters' view of it); the rest (``extend``, ``next_logits``, ``trim_to``) serves
    the neural drafters, which run the tiny model through it too."""

    def __init__(self, model: GPT):
        cfg = model.config
        self.model = model
        self.w = lean_weights(model)
        self.block_size, self.vocab_size, self.n_layer = cfg.block_size, cfg.vocab_size, cfg.n_layer
        self.n_head, self.hs, self.n_embd = cfg.n_head, cfg.n_embd // cfg.n_head, cfg.n_embd
        self.dtype = self.w.wte.dtype
        self.device = self.w.wte.device
        self._alloc(cfg.block_size + 64)  # the cache plus a round's root and drafts; grows if a tree is larger
        self.start = 0  # window start of the cache
        self.cached: list[int] = []  # the tokens the cache holds
        self._new = 0  # scratch entries written by the last forward, not yet kept
        self.feature_layers: tuple[int, ...] = ()  # see capture()
        self.feature_index: dict[int, int] = {}  # layer -> its plane in feats

    def _alloc(self, capacity: int) -> None:
        old = getattr(self, "kv_buf", None)
        # Every layer's keys and values in one buffer, so that keep() gathers a tree's path for all of
        # them in one index_select (16 per-tensor gathers cost a tree round ~30 us); each layer's K and V
        # are views of it, shaped and strided as tensors of their own would be.
        self.kv_buf = torch.empty(len(self.w.layers), 2, self.n_head, capacity, self.hs, dtype=self.dtype,
                                  device=self.device)  # fmt: skip  # (L, 2, nh, capacity, hs)
        self.kv = [(layer[0], layer[1]) for layer in self.kv_buf]  # per layer (k, v), each (nh, capacity, hs)
        old_feats = getattr(self, "feats", None)
        self.feats = torch.empty(len(getattr(self, "feature_layers", ())), capacity, self.n_embd,
                                 dtype=self.dtype, device=self.device)  # fmt: skip  # (F, capacity, C)
        if old is not None:
            n = old.size(3)
            self.kv_buf[:, :, :, :n] = old
            if old_feats.size(0) == self.feats.size(0):  # capture() changes the layers on an empty cache
                self.feats[:, :n] = old_feats

    def capture(self, layers: tuple[int, ...]) -> None:
        """Keep, per cache entry, the residual stream after each block in ``layers`` (0-based;
        n_layer - 1 is the top, ln_f's input), written by every pass and kept with the keys and
        values: the features a draft head reads (EAGLE, Medusa) without another target pass.
        Off by default, so the baseline pays nothing for it. Call before the first forward."""
        assert self.length == 0 and self._new == 0, "capture features from the start"
        assert all(0 <= i < len(self.w.layers) for i in layers)
        if tuple(layers) == self.feature_layers:
            return  # nothing to change (the engine turns capture off for a drafter that never drafts)
        self.feature_layers = tuple(layers)
        self.feature_index = {layer: i for i, layer in enumerate(self.feature_layers)}
        self.feats = torch.empty(len(layers), self.capacity, self.n_embd, dtype=self.dtype, device=self.device)

    def features(self, start: int, stop: int) -> torch.Tensor:
        """The captured features of cache entries start..stop-1. -> (F, stop - start, C), a view"""
        return self.feats[:, start:stop]

    @property
    def capacity(self) -> int:
        return self.kv_buf.size(3)

    @property
    def length(self) -> int:
        return len(self.cached)

    def kv_cache(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The committed keys and values of every layer, as GPT returns them: (1, nh, length, hs) each."""
        n = self.length
        return [(k[None, :, :n], v[None, :, :n]) for k, v in self.kv]

    def forward(self, tokens: list[int], positions: list[int], tree_mask=None, logits: bool = True, skip: int = 0):
        """Run ``tokens`` after the cache. Their keys and values are written after the committed
        entries, as scratch until ``keep`` (the last forward's scratch is dropped). tree_mask: (T, T)
        bool among the new tokens, True = may attend (None: causal); every new token sees the whole
        cache. ``skip``: the first rows get no logits (a prefill round's context). -> (T - skip, V), or None."""
        bias = None if tree_mask is None else attn_bias(self.length, tree_mask, self.dtype)  # (T, P+T); None: causal
        self._new = 0
        return self._run(tokens, positions, bias, logits, skip)

    def extend(self, tokens: list[int], positions: list[int], scratch_mask: torch.Tensor, logits: bool = True):
        """Run ``tokens`` after the scratch of the forward (and extends) since the last ``keep``:
        a draft tree grown one depth per pass. scratch_mask: (T, S+T) bool over the S scratch
        entries, then the new tokens, True = may attend; every new token sees the whole committed
        cache. The new entries join the scratch (``keep`` indexes all of it). -> (T, V) logits, or None."""
        T, S = len(tokens), self._new
        assert scratch_mask.shape == (T, S + T), "the mask covers the scratch and the new tokens"
        return self._run(tokens, positions, attn_bias(self.length, scratch_mask, self.dtype), logits)  # bias (T, P+S+T)

    @torch.no_grad()
    def _run(self, tokens: list[int], positions: list[int], bias: torch.Tensor | None, logits: bool, skip: int = 0):
        """The lean pass: writes keys and values after the committed entries and the scratch.
        bias: (T, P+S+T) additive mask (attn_bias), or None: causal. Logits of the rows from ``skip`` on
        (the head is row by row: the same rows as a full head's)."""
        T, P = len(tokens), self.length + self._new  # where the new entries go: after the cache and the scratch
        self.reserve(P + T)
        x = self.blocks(self.embed(tokens, positions), P, bias)  # (T, C)
        self._new += T
        if not logits:
            return None
        return self.head(x[skip:])  # (T - skip, V)

    def reserve(self, n: int) -> None:
        """Room for n entries (committed and scratch)."""
        if self.capacity < n:
            self._alloc(2 * n)

    def embed(self, tokens: list[int], positions: list[int]) -> torch.Tensor:
        """Token plus position embeddings; PositionError outside the window. -> (T, C)"""
        PositionError.check(min(positions), max(positions), self.block_size)
        idx = torch.tensor(tokens, device=self.device)
        pos = torch.tensor(positions, device=self.device)
        return self.w.wte[idx] + self.w.wpe[pos]  # (T, C)

    def blocks(self, x: torch.Tensor, P: int, bias=None, n_layers: int | None = None) -> torch.Tensor:
        """The first ``n_layers`` transformer blocks (all by default) over x (T, C): the new keys and
        values are written at cache entries P..P+T-1 and attend to entries 0..P-1 (and, among
        themselves, as ``bias`` allows: (T, P+T) from attn_bias; None: causal).
        Shared by the full forward and the layer-skip draft (specviz/drafters/layer_skip.py),
        which runs the first layers only. -> (T, C) the residual stream after the last block run"""
        T, feature = x.size(0), self.feature_index
        for layer, (w, (K, V)) in enumerate(zip(self.w.layers[:n_layers], self.kv[:n_layers], strict=True)):
            # A captured layer writes its output straight into the features' rows: a copy after it cost a
            # one-token pass a few percent, paid by every round of EAGLE and Medusa (docs/notes/kernels.md).
            out = self.feats[feature[layer], P : P + T] if layer in feature else None  # (T, C) view, or None
            x = lean_block(x, w, K, V, P, bias, self.n_head, out)  # (T, C)
        return x

    def first_layers(self, tokens: list[int], positions: list[int], at: int, n_layers: int) -> torch.Tensor:
        """The layer-skip draft's pass (specviz/drafters/layer_skip.py): ``tokens`` through the first
        ``n_layers`` blocks only, their keys and values written at cache entries at..at+T-1 (scratch the
        verify pass overwrites with the same values), causal after every entry before ``at``. -> (T, C)"""
        self.reserve(at + len(tokens))
        return self.blocks(self.embed(tokens, positions), at, None, n_layers)

    def head(self, x: torch.Tensor) -> torch.Tensor:
        """The final layer norm and the language-model head (also the layer-skip draft's early exit). (T, C) -> (T, V)"""
        return self.w.lm_head(F.layer_norm(x, (self.n_embd,), *self.w.ln_f))  # (T, V)

    def keep(self, new: list[int], tokens: list[int]) -> None:
        """Commit entries of the last forward: ``new`` are their indices among its inputs (a
        chain's prefix, or a tree's accepted path), ``tokens`` the tokens they hold."""
        P, n = self.length, len(new)
        assert n == len(tokens) and (n == 0 or min(new) >= 0 and max(new) < self._new)
        if new != list(range(n)):  # a tree's path: gather it into place after the cache, every layer at once
            src = torch.tensor(new, device=self.device) + P
            self.kv_buf[:, :, :, P : P + n] = self.kv_buf.index_select(3, src)
            if self.feature_layers:
                self.feats[:, P : P + n] = self.feats.index_select(1, src)
        self.cached += tokens  # in place: no one else holds the list (copy_from and trim_to copy)
        self._new = 0

    def sync(self, context: list[int]) -> bool:
        """Make the cache hold context[s:-1] for this context's window start s, reusing the
        longest common prefix (trimming what the last round rejected). True if the window
        moved and the cache was rebuilt (a re-prefill)."""
        moved, missing = self.trim_missing(context)
        if missing:
            self.forward(missing, list(range(self.length, self.length + len(missing))), logits=False)
            self.keep(list(range(len(missing))), missing)
        return moved

    def trim_missing(self, context: list[int]) -> tuple[bool, list[int]]:
        """``sync`` without the pass: trim to the longest common prefix, and say what it would feed.
        -> (whether the window moved, the tokens of context[s:-1] the cache lacks), for a caller that
        runs them in its own pass (the engine's verify pass: one pass where a prefill round took two)."""
        moved = self.trim_to(context)
        return moved, context[self.start + self.length : -1]

    def next_logits(self, context: list[int]) -> torch.Tensor:
        """Logits for the token after ``context`` (the cache then holds all of it): one forward
        pass over whatever the cache lacks, the last token included. (V,)"""
        self.trim_to(context)
        missing = context[self.start + self.length :]
        logits = self.forward(missing, list(range(self.length, self.length + len(missing))), skip=len(missing) - 1)
        self.keep(list(range(len(missing))), missing)
        return logits[-1]

    def trim_to(self, context: list[int]) -> bool:
        """Keep only the longest common prefix of the cache and context[s:-1] (nothing if the
        window start s moved; then True). Feeds nothing: a trim only shortens the cache."""
        s = window_start(len(context), self.block_size)
        moved = s != self.start
        if moved:
            self.cached, self.start = [], s
        n = len(self.cached)
        if self.cached != context[s : s + n] or n > len(context) - s - 1:
            keep = 0
            for a, b in zip(self.cached, context[s:-1], strict=False):
                if a != b:
                    break
                keep += 1
            self.cached = self.cached[:keep]
        self._new = 0
        return moved

    def held(self) -> tuple:
        """The model, its lean weights and the cache's buffers: what a drafter bound to this target shares
        with plain decoding, left out of the drafter's memory figure (specviz/bench/memory.py)."""
        return (self.model, self.w, *(t for kv in self.kv for t in kv), self.feats)

    def copy_from(self, other: "CachedModel") -> None:
        """Take another cache's committed entries (same model): a shared prompt's prefill."""
        assert other.w is self.w
        n = other.length
        if self.capacity < n:
            self._alloc(2 * n)
        self.kv_buf[:, :, :, :n] = other.kv_buf[:, :, :, :n]
        if self.feature_layers:
            assert other.feature_layers == self.feature_layers
            self.feats[:, :n] = other.feats[:, :n]
        self.start, self.cached, self._new = other.start, list(other.cached), 0
