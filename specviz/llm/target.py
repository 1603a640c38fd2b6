"""``HFTarget``: the target-model interface (specviz/core/target.py) over a Hugging Face transformers causal LM,
the second implementation beside the nanoGPT's CachedModel.

The cache is transformers' own ``DynamicCache``: a forward appends the new rows' keys and values after the
committed entries as scratch, ``keep`` gathers a tree's accepted path into place (a chain's prefix is already
there) and crops the rest, and a trim crops to the longest common prefix with the context. Tree attention
is a 4D additive mask (1, 1, T, P + T) over the cache and the new rows, which transformers passes to the
attention as it is: that is what lets one verify pass score every branch of a draft tree. The architectures
whose attention takes such a mask, with position ids as given, are listed in ``SUPPORTED`` (tested:
tests/unit/test_llm_target.py); any other is refused before its weights load.

Positions are cache entries, as in CachedModel: entry i holds context[start + i] at position i, and the
window policy (window_start, room) is the one every target shares, with the model's maximum position count
as its block size.
"""

import copy

import torch
from transformers import DynamicCache

from models.gpt import PositionError
from specviz.kernels.cached_model import CachedModel
from specviz.llm.batched import forward_batch
from specviz.llm.lean import lean

# model_type -> the config field that names its context window. Llama-family models (SmolLM2) and GPT-2.
SUPPORTED = {"llama": "max_position_embeddings", "gpt2": "n_positions"}


class UnsupportedModel(ValueError):
    """An architecture the target cannot run with tree attention; the message is one line."""


def check_architecture(config) -> str:
    """The config's model_type if supported, else UnsupportedModel naming it and the supported ones."""
    kind = getattr(config, "model_type", None)
    if kind not in SUPPORTED:
        raise UnsupportedModel(f"architecture {str(kind)[:40]!r} is not supported (supported: "
                               f"{', '.join(SUPPORTED)}): its attention must take a 4D tree mask")  # fmt: skip
    return kind


class HFTarget:
    """A transformers causal LM with its DynamicCache. Implements specviz.core.target.TargetModel except the
    draft heads' features (capture with layers, features): those heads are trained on the character model."""

    def __init__(self, model):
        cfg = model.config
        kind = check_architecture(cfg)
        self.model = model.eval()  # the model as loaded: shared by every session, never changed
        self.net = lean(self.model)  # the same weights, its linear layers on our kernel: what the passes run
        self.block_size = int(getattr(cfg, SUPPORTED[kind]))
        self.vocab_size = int(model.get_output_embeddings().weight.shape[0])
        self.n_layer, self.n_embd = int(cfg.num_hidden_layers), int(cfg.hidden_size)
        self.dtype = model.get_output_embeddings().weight.dtype
        self.device = model.get_output_embeddings().weight.device
        self.cache = DynamicCache(config=cfg)
        self.start = 0  # window start of the cache
        self.cached: list[int] = []  # the tokens the committed entries hold
        self._new = 0  # scratch entries written by the last forward, not yet kept
        self._early: dict[int, object] = {}  # n_layers -> the base model cut there (layer-skip's draft)

    @property
    def length(self) -> int:
        return len(self.cached)

    def _crop(self, n: int, layers: int | None = None) -> None:
        """Keep the first n entries (committed or scratch) of the first ``layers`` layers (all by default; a
        layer-skip draft fills its few layers further than the rest)."""
        for layer in self.cache.layers[:layers]:
            extra = layer.keys.shape[-2] - n if layer.is_initialized else 0
            if extra > 0:
                layer.crop(-extra)

    def mask(self, P: int, allow: torch.Tensor) -> torch.Tensor:
        """The additive attention mask of T new rows after P entries that every row sees: 0 where a row may
        attend, the dtype's minimum where not. allow (T, S+T) bool over the rest -> (1, 1, T, P + S + T)"""
        T = allow.size(0)
        full = torch.cat([torch.ones(T, P, dtype=torch.bool), allow], 1)
        bias = torch.zeros(full.shape, dtype=self.dtype).masked_fill_(~full, torch.finfo(self.dtype).min)
        return bias.to(self.device)[None, None]

    @torch.no_grad()
    def forward(self, tokens: list[int], positions: list[int], tree_mask=None, logits: bool = True, skip: int = 0):
        """Run ``tokens`` after the committed entries (the last forward's scratch is dropped); their keys and
        values stay as scratch until ``keep``. tree_mask (T, T) bool, True = may attend; None causal. ``skip``:
        the first rows whose logits nobody reads (a prefill round's context), left out of the result.
        -> (T - skip, V) logits, or None"""
        self._crop(self.length)
        self._new = 0
        T, P = len(tokens), self.length
        if tree_mask is None and positions == list(range(P, P + T)):
            allow = None  # a causal chain right after the cache: transformers' own causal mask (test_llm_fast.py)
        else:
            allow = torch.ones(T, T, dtype=torch.bool).tril() if tree_mask is None else tree_mask
        return self._run(tokens, positions, allow, logits, skip)

    @torch.no_grad()
    def extend(self, tokens: list[int], positions: list[int], scratch_mask: torch.Tensor, logits: bool = True):
        """Run ``tokens`` after the scratch of the forward (and extends) since the last ``keep``: a draft tree
        grown one depth per pass. scratch_mask (T, S+T) bool over the S scratch entries, then the new tokens.
        -> (T, V) logits, or None"""
        assert scratch_mask.shape == (len(tokens), self._new + len(tokens)), "the mask covers scratch and new"
        return self._run(tokens, positions, scratch_mask, logits)

    def _run(self, tokens: list[int], positions: list[int], allow: torch.Tensor | None, logits: bool, skip: int = 0):
        """The pass. allow (T, S+T) bool over the scratch and the new rows, or None: a causal chain right after
        the committed entries, for which transformers builds the mask itself, as in its own generate: none at
        all for one row or a prefill (SDPA's mask-free path), a causal one otherwise. Only the rows from
        ``skip`` on reach the language-model head (transformers' logits_to_keep)."""
        PositionError.check(min(positions), max(positions), self.block_size)
        mask = None if allow is None else self.mask(self.length, allow)
        args = dict(input_ids=torch.tensor([tokens], device=self.device),
                    position_ids=torch.tensor([positions], device=self.device),
                    attention_mask=mask, past_key_values=self.cache, use_cache=True)  # fmt: skip
        self._new += len(tokens)
        if not logits:
            self.net.base_model(**args)  # no language-model head: a prefill
            return None
        assert 0 <= skip < len(tokens), "skip leaves at least one row"
        return self.net(**args, logits_to_keep=len(tokens) - skip).logits[0].to(self.dtype)  # (T - skip, V)

    def keep(self, new: list[int], tokens: list[int]) -> None:
        """Commit the last forward's rows ``new`` (a chain's prefix, a tree's path) that hold ``tokens``."""
        P, n = self.length, len(new)
        assert n == len(tokens) and (n == 0 or min(new) >= 0 and max(new) < self._new)
        if new != list(range(n)):  # a tree's path: gather it into place after the committed entries
            src = torch.tensor(new, device=self.device) + P
            for layer in self.cache.layers:
                layer.keys[..., P : P + n, :] = layer.keys.index_select(-2, src)
                layer.values[..., P : P + n, :] = layer.values.index_select(-2, src)
        self._crop(P + n)
        self.cached += tokens
        self._new = 0

    def trim_to(self, context: list[int]) -> bool:
        """Keep only the longest common prefix of the cache and context[s:-1] (all of it goes if the window
        start s moved; then True). Feeds nothing."""
        moved = CachedModel.trim_to(self, context)  # the token bookkeeping; then the tensors follow it
        self._crop(self.length)
        return moved

    # The cache policy above the pass is CachedModel's, member for member: these use only forward, keep,
    # trim_to, start and length, which this class implements over its own cache.
    trim_missing = CachedModel.trim_missing
    sync = CachedModel.sync
    next_logits = CachedModel.next_logits
    forward_batch = staticmethod(forward_batch)  # several sequences' rows in one model call (core/batch.py)

    def copy_from(self, other: "HFTarget") -> None:
        """Take another cache's committed entries (same model): a shared prompt's prefill."""
        assert other.model is self.model
        self.cache = DynamicCache(config=self.model.config)
        n = other.length
        for i, layer in enumerate(other.cache.layers):
            self.cache.update(layer.keys[..., :n, :].clone(), layer.values[..., :n, :].clone(), i)
        self.start, self.cached, self._new = other.start, list(other.cached), 0

    def capture(self, layers: tuple[int, ...]) -> None:
        if layers:
            raise ValueError("draft heads read features of the character model only; this target keeps none")

    def features(self, start: int, stop: int) -> torch.Tensor:
        raise ValueError("this target keeps no features")

    def early(self, n_layers: int):
        """The base model cut to its first n_layers blocks, sharing every weight (the model itself is shared by
        every session and never changed): its blocks write their keys and values into this cache's first
        n_layers layers, and it ends with the model's final norm."""
        early = self._early.get(n_layers)
        if early is None:
            base = self.net.base_model
            early = copy.copy(base)
            early._modules = dict(base._modules)
            name = "layers" if "layers" in base._modules else "h"  # Llama's blocks, GPT-2's
            early._modules[name] = torch.nn.ModuleList(list(base._modules[name])[:n_layers])
            early.config = copy.copy(base.config)
            early.config.num_hidden_layers = n_layers
            self._early[n_layers] = early
        return early

    @torch.no_grad()
    def first_layers(self, tokens: list[int], positions: list[int], at: int, n_layers: int) -> torch.Tensor:
        """Layer-skip's draft: ``tokens`` through the first n_layers blocks only, their keys and values written
        at entries at.. of those layers (scratch the verify pass replaces), causal after every entry before
        ``at``. transformers' base model applies its final norm itself, so the rows come back normed and
        ``head`` is the language-model head alone: head(first_layers(...)) is the early exit. (T,) -> (T, C)"""
        self._crop(at, n_layers)
        T = len(tokens)
        out = self.early(n_layers)(input_ids=torch.tensor([tokens], device=self.device),
                                   position_ids=torch.tensor([positions], device=self.device),
                                   attention_mask=self.mask(at, torch.ones(T, T, dtype=torch.bool).tril()),
                                   past_key_values=self.cache, use_cache=True)  # fmt: skip
        return out.last_hidden_state[0]  # (T, C), normed

    @torch.no_grad()
    def head(self, x: torch.Tensor) -> torch.Tensor:
        """The language-model head over first_layers' (normed) rows. (T, C) -> (T, V)"""
        return self.net.get_output_embeddings()(x).to(self.dtype)

    def held(self) -> tuple:
        """The model and the cache's tensors: what a drafter bound to this target shares with plain decoding."""
        return (self.model, *(t for layer in self.cache.layers for t in (layer.keys, layer.values)))
