"""EAGLE drafts (EAGLE-1, Li et al. 2024; EAGLE-3, Li et al. 2025): a one-block head drafts from the
target's own hidden features (models/eagle.py), read from the target's KV cache at no extra pass.

The target (specviz/core/target.py) captures, per cache entry, the residual stream after the blocks
the head reads (TargetModel.capture, asked for in __init__, before the first forward). The cache holds the
context minus its root (the last token), so entries 0..P-1 are context[s..s+P-1] with their
features f_0..f_{P-1}: the head's entry i reads (f_i, context[s+i+1]), and its entry P-1 reads the
root as its token, which is how the head drafts the token after the root without the root's own
feature (the verify pass computes that one; EAGLE's one-position shift).

    the head's cache   its own keys and values, one entry per target entry (true features only).
                       Each round feeds the entries the target committed since (the accepted
                       tokens), in the same pass as the first draft step; draft steps are scratch,
                       never kept. At a window jump (the target's start moves) both restart.
    draft step j >= 1  reads the head's own last output state in place of the features
                       (EAGLE-1: its predicted feature; EAGLE-3: its hidden state) and the token
                       it just drafted: K head passes per round.
    round 0            the target's cache is empty: the engine runs its prefill, the one the verify
                       pass would run anyway, before the draft (timed as the verify pass's), as for
                       every drafter that reads the cache; target.sync(context) here then finds it done.
    window jump        (every half block past block_size) the target's cache is stale: that round
                       is not drafted (an empty draft), the verify pass re-prefills the cache, which
                       recomputes the features, and the head re-feeds them next round. So the round
                       records its re-prefill truthfully, and nothing is prefilled twice.

q is the temperature-scaled head distribution each token was drawn from (one-hot argmax at T = 0),
so verification stays lossless whatever the head predicts.

The head runs through the target's lean pass (cached_model.lean_block, a preallocated cache written
in place; LeanHead), pinned to the EagleHead module by tests/unit/test_eagle.py (float64, 1e-12).

draft_cost (target-forward units per drafted token): 0.5. A head step (fc, one block, the target's
lm_head) is ~0.27 of a one-token target pass alone (260 vs 960 us); the bench's draft c, which also
counts sampling, the notes and feeding last round's entries, was 0.65-0.69 at K = 1, 0.54-0.57 at K = 2
and 0.49-0.52 at K = 3 for eagle3 (5 presets, 128 tokens, 1 thread). At this cost a head
that accepts ~0.8 per level earns ~1.08x (eagle3, K = 2, T = 0); at T = 0.8 it does not pay.
"""

import weakref

import torch
from torch.nn import functional as F

from models.eagle import EagleHead, load_head
from specviz.core.sampling import probs_from_logits
from specviz.core.target import TargetModel, window_start
from specviz.drafters.base import Drafter, chain, sample_chain
from specviz.kernels.cached_model import block_weights, lean_block
from specviz.kernels.linear import Linear

# Per drafted token, in target forward passes (see the docstring for the measurements).
DRAFT_COST = 0.5
SKIPPED = (
    "no draft: none asked, no context entry to read yet, or the window moved (the verify pass re-prefills "
    "the target's cache and its features; the head reads them next round)"
)
FEATURE_DIMS = 16  # feature dimensions shown per row in the notes (of C = 256): a slice keeps notes small
FEATURE_ROWS = 6  # context entries shown per round

_HEADS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def shared_head(name: str, target) -> EagleHead:
    """The head ``name`` for this target Checkpoint, loaded once per target model (read-only)."""
    heads = _HEADS.setdefault(target.model, {})
    if name not in heads:
        heads[name] = load_head(name, target)
    return heads[name]


def rounded(row: torch.Tensor) -> list[float]:
    """A feature row's first FEATURE_DIMS values, rounded, for the notes."""
    return [round(v, 3) for v in row[:FEATURE_DIMS].tolist()]


class LeanHead:
    """An EagleHead's weights laid out for the lean pass (specviz/kernels/cached_model.py): its block through
    lean_block, its fc and fuse as specviz.kernels.linear.Linear (copies), and the target's frozen wte, ln_f
    and lm_head that the head borrows (EagleHead.attach; lm_head transposed once). The head module
    stays the readable reference (tests/unit/test_eagle.py pins the two together). Holds no reference to
    the head itself, so that _LEAN's weak key can go."""

    def __init__(self, head: EagleHead):
        self.config = head.config
        self.block = block_weights(head.h)
        self.fc = Linear.of(head.fc)  # (2C,) -> (C,)
        self.fuse = Linear.of(head.fuse) if head.config.variant == 3 else None  # (F * C,) -> (C,)
        wte, ln_w, ln_b, lm_head = head.frozen  # the target's, frozen (EagleHead.attach)
        self.wte, self.ln_f, self.lm_head_t = wte, (ln_w, ln_b), lm_head.t().contiguous()  # (V, C), (C,) x 2, (C, V)
        self._fold = None  # entries(): (the fusion and fc's feature half as one Linear, fc's token half (V, C))

    def fused(self, feats: torch.Tensor) -> torch.Tensor:
        """g from the target's features (F, T, C): the top one (EAGLE-1) or their fusion. -> (T, C)"""
        if self.fuse is None:
            return feats[-1]
        return self.fuse(torch.cat(list(feats), dim=-1))

    def entries(self, feats: torch.Tensor, tokens: list[int]) -> torch.Tensor:
        """fc(cat[fused(feats), wte[tokens]]) for a head with fused features (EAGLE-3's shape: DFlash), folded for
        a drafter that does not show g: fc is linear in each half, so its feature half composed with the fusion
        is one product, (W_g W_fuse) f + W_g b_fuse, and its token half with its bias a (V, C) table,
        W_e wte[x] + b. One weight read of 3C x C where two read 5C x C. (F, T, C), (T,) -> (T, C)"""
        if self._fold is None:  # built at the first call, in float64, then in the head's dtype
            C, fc, dt = self.config.n_embd, self.fc, self.fc.weight_t.dtype
            Wg, We = fc.weight_t.double().t().split(C, dim=1)  # (C, C) each: fc's feature half, its token half
            table = torch.addmm(fc.bias.double(), self.wte.double(), We.t()).to(dt)  # (V, C)
            Wf, bf = self.fuse.weight_t.double().t(), self.fuse.bias.double()  # (C, F C), (C,)
            self._fold = (Linear((Wg @ Wf).to(dt), (Wg @ bf).to(dt)), table)
        fuse, table = self._fold
        return fuse(torch.cat(list(feats), dim=-1)) + table[tokens]  # (T, F C) -> (T, C)

    def step(self, g: torch.Tensor, tokens: list[int], kv: tuple, at: int, bias=None, keys_only=0) -> torch.Tensor:
        """One head pass: entries reading (g (T, C), tokens) written into kv at at..at+T-1, attending
        as lean_block does (the first ``keys_only`` only written). -> (T - keys_only, C) their output states"""
        x = self.fc(torch.cat([g, self.wte[tokens]], dim=-1))  # (T, C)
        return lean_block(x, self.block, *kv, at, bias, self.config.n_head, keys_only=keys_only)

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(h, (h.size(-1),), *self.ln_f) @ self.lm_head_t  # (..., V)


_LEAN: "weakref.WeakKeyDictionary[EagleHead, LeanHead]" = weakref.WeakKeyDictionary()


def lean_head(head: EagleHead) -> LeanHead:
    """One LeanHead per (read-only) head."""
    if head not in _LEAN:
        _LEAN[head] = LeanHead(head)
    return _LEAN[head]


class HeadCache:
    """The head's KV cache over the context, kept in step with the target's cache: preallocated and
    written in place, as the target's. Entries 0..n-1 are the context's (true features); a draft
    writes its steps after them, as scratch that the next round's entries overwrite."""

    def __init__(self, head: EagleHead, target: TargetModel):
        self.head, self.lean, self.target = head, lean_head(head), target
        target.capture(head.config.layers)
        self.kv = self._alloc(target.block_size + 64)  # (k, v), each (nh, capacity, hs)
        self.start, self.n = 0, 0
        self.last = None  # the head's state at its last entry (the one that drafts after the root), (1, C)
        self.fed = 0  # entries fed through the head, all rounds (tests: the context is fed once)

    def _alloc(self, capacity: int) -> tuple[torch.Tensor, torch.Tensor]:
        c = self.lean.config  # the head's own block: its heads, the target's width and dtype
        return tuple(torch.empty(c.n_head, capacity, c.n_embd // c.n_head, dtype=self.target.dtype) for _ in range(2))

    def step(self, g: torch.Tensor, tokens: list[int], at: int, bias=None, keys_only=0) -> torch.Tensor:
        """LeanHead.step on this cache, grown first if entries at..at+T-1 would not fit. -> (T - keys_only, C)"""
        self.fit(at + len(tokens))
        return self.lean.step(g, tokens, self.kv, at, bias, keys_only)

    def fit(self, n: int) -> None:
        """Grow the cache, keeping its entries, if n entries would not fit."""
        if self.kv[0].size(1) < n:
            old, self.kv = self.kv, self._alloc(2 * n)
            for new, was in zip(self.kv, old, strict=True):
                new[:, : was.size(1)] = was

    def catch_up(self, context: list[int]) -> bool | None:
        """Bring the target's cache up to ``context`` (round 0: the verify pass's own prefill, which in a run
        the engine has done already) and restart this cache at a window jump. -> whether the target
        re-prefilled, or None with no entry to read (a window jump: the verify pass re-prefills the cache and
        its features, read next round; or a one-token context)."""
        t = self.target
        if t.start != window_start(len(context), t.block_size):
            return None
        moved = t.sync(context)
        if t.start != self.start:
            self.n, self.start = 0, t.start
        elif (
            self.n > t.length
        ):  # a context shorter than the last one (never in a run): its entries before the root hold
            self.n = t.length - 1
        return None if t.length == 0 else moved

    @torch.no_grad()
    def prepare(self, context: list[int]) -> tuple[torch.Tensor, dict] | None:
        """Feed the entries the target committed since the last round. -> (h (1, C) the state that
        drafts the token after the root, notes), or None with no entry to read."""
        t = self.target
        moved = self.catch_up(context)
        if moved is None:
            return None
        P, n = t.length, self.n
        if n == P:  # asked again for the same context (adaptive K's shadow draft): nothing new to feed
            return self.last, {"entries_fed": 0, "entries_cached": P, "reprefill": moved, "width": self.last.size(-1),
                               "layers": list(self.head.config.layers), "feature_rows": []}  # fmt: skip
        T = P - n
        tokens = context[t.start + n + 1 : t.start + P + 1]  # (T,) ends with the root
        g = self.lean.fused(t.features(n, P))  # (T, C) from entries n..P-1
        # causal after the past: lean_block's mode with no mask, the same rows as with attn_bias(n, causal) (a mask
        # built each round cost a round ~0.05-0.08 of a target pass); only the root's output drafts, so the
        # entries before it only write their keys and values
        self.last = self.step(g, tokens, n, keys_only=T - 1)  # (1, C)
        self.n, self.fed = P, self.fed + T
        first = max(0, T - FEATURE_ROWS)
        notes = {"entries_fed": T, "entries_cached": P, "reprefill": moved, "layers": list(self.head.config.layers),
                 "width": g.size(-1),
                 "feature_rows": [{"entry": n + i, "token": context[t.start + n + i + 1], "values": rounded(g[i])}
                                  for i in range(first, T)]}  # fmt: skip
        return self.last, notes


def head_name(settings) -> str:
    """The EAGLE-3 head the settings ask for (models/eagle.py HEAD_NAMES): with or without training-time test."""
    return "eagle3" if settings.eagle_ttt else "eagle3-nottt"


class EagleDrafter(Drafter):
    name = "eagle3"
    under_load = True  # the batch bench's neural head
    summary = "a one-block head on low, middle and top features fused, trained with training-time test"
    paper = "EAGLE-3 (Li et al., 2025)"
    needs = frozenset({"target_cache", "heads"})
    panels = ("eagle features",)
    stateful = True  # bound to one generation's target cache
    draft_cost = DRAFT_COST

    @classmethod
    def head_name(cls, settings) -> str:
        return head_name(settings)

    @classmethod
    def load(cls, settings, checkpoint):
        shared_head(cls.head_name(settings), checkpoint)  # a head paired with this target

    @classmethod
    def build(cls, src):
        return cls(shared_head(cls.head_name(src.settings), src.checkpoint), src.need("target", cls.name))

    def __init__(self, head: EagleHead, target: TargetModel):
        self.head = head
        self.cache = HeadCache(head, target)

    def draft(self, context, k, temperature, gen):
        ready = self.cache.prepare(context) if k > 0 else None
        if ready is None:
            return chain([], notes={"head": self.name, "skipped": SKIPPED})
        h, notes = ready
        state = {"h": h, "steps": 0}

        @torch.no_grad()
        def next_dist(seq):
            if state["steps"]:  # step j >= 1: the head's own state and the token it drew, as scratch
                state["h"] = self.cache.step(state["h"], [seq[-1]], self.cache.n + state["steps"] - 1)  # (1, C)
                row = {"step": state["steps"], "token": seq[-1], "values": rounded(state["h"][0])}
                notes["feature_rows"].append(row)
            state["steps"] += 1
            probs = probs_from_logits(self.cache.lean.logits(state["h"][0]), 1.0)  # untempered: sample_chain scales
            return probs, {}

        draft = sample_chain(next_dist, context, k, temperature, gen)
        qx = [round(float(q[x]), 4) for q, x in zip(draft.q, draft.tokens, strict=True)] if draft.q is not None else []
        draft.notes = {"head": self.name, **notes, "passes": state["steps"],
                       "predicted": [{"token": x, "q": qx[i] if qx else 1.0} for i, x in enumerate(draft.tokens)]}  # fmt: skip
        return draft


class Eagle1Drafter(EagleDrafter):
    name = "eagle1"
    under_load = False
    summary = "a one-block head that predicts the target's next top-layer feature from its features"
    paper = "EAGLE (Li et al., 2024)"

    @classmethod
    def head_name(cls, settings) -> str:
        return "eagle1"
