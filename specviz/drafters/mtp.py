"""MTP drafts (DeepSeek-V3's multi-token prediction, DeepSeek-AI 2024): module k drafts depth k from
the target's own top feature, through one module per depth (models/mtp.py), read from the target's KV
cache at no extra target pass.

Positions. The target's cache holds the context minus its root: entries 0..P-1 are positions
s..s+P-1 (s the window start) with their top features h^0. Module k's entry j reads h^{k-1}_j and
t_{j+k}, the token k steps on, so its entry P-1 (the token before the root) drafts depth k: module 1
reads the root, module k the token drafted at depth k - 1. Module k's entries j <= P-k read context
tokens only (true entries); its entries P-k+1..P-1 read draft tokens (scratch: kept
only if those tokens are accepted).

    per module         its own KV cache and output states (h^k rows), preallocated, written in
                       place, and the token sequence its last pass read. Entry j depends on the
                       context up to t_{j+k} and nothing later, so it stays right while the new
                       sequence agrees with that one up to t_{j+k}: a scratch entry whose draft
                       tokens were all accepted is kept, not fed again. Depth k's pass feeds module
                       k its entries from the first one that disagrees to P-1 in one pass: at most
                       max(accepted + 1, k) rows (the k - 1 scratch ones among them); the scratch
                       rows read module k - 1's rows of this round's pass, so depth k runs after
                       depth k - 1, once each: K module passes a round, each over a handful of rows.
    K past D           there is no module past D: a round drafts min(K, modules) tokens, and
                       adaptive K weighs no deeper K (max_depth).
    round 0            the target's cache is empty: target.sync(context) runs the prefill the
                       verify pass would run anyway, as EAGLE and Medusa do.
    window jump        the target's cache is stale: no draft that round; the verify pass
                       re-prefills it, and every module restarts from entry 0 next round.

q is the temperature-scaled module distribution each token was drawn from (one-hot argmax at T = 0),
so token-wise verification stays exact whatever the modules predict. The modules run through the
target's lean pass (cached_model.lean_block), pinned to MTPHeads.unroll by tests/unit/test_mtp.py.
"""

import weakref

import torch
from torch.nn import functional as F

from models.mtp import DEFAULT_PATH, MTPConfig, MTPHeads, load_mtp, rms_norm
from specviz.core.sampling import probs_from_logits
from specviz.core.target import TargetModel, window_start
from specviz.drafters.base import Drafter, chain, sample_chain
from specviz.kernels.cached_model import block_weights, lean_block
from specviz.kernels.linear import Linear

# Per drafted token, in target forward passes: one module pass (proj, one block, the target's ln_f and
# lm_head) per depth, as an EAGLE head step, but module k's pass runs max(accepted + 1, k) rows where
# EAGLE's later steps run one, since every module keeps its own cache over the context. The bench's draft c
# (K = 4, 11 presets, 1 thread) read 0.76-0.86 against EAGLE-3's 0.51-0.61 in the same runs (docs/notes/mtp.md).
DRAFT_COST = 0.8
SKIPPED = (
    "no draft: none asked, no context entry to read yet, or the window moved (the verify pass re-prefills "
    "the target's cache and its features; the modules read them next round)"
)

_HEADS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def shared_mtp(target) -> MTPHeads:
    """The shipped modules for this target Checkpoint, loaded once per target model (read-only)."""
    if target.model not in _HEADS:
        _HEADS[target.model] = load_mtp(DEFAULT_PATH, target)
    return _HEADS[target.model]


class LeanModule:
    """One MTPModule's weights laid out for the lean pass: its hnorm gain, the target's embeddings through its
    enorm (a table), its projection as a specviz.kernels.linear.Linear, its block through lean_block."""

    def __init__(self, mod, n_head: int, wte: torch.Tensor):
        self.hnorm = mod.hnorm.detach().clone()  # (C,)
        self.emb = rms_norm(wte, mod.enorm.detach())  # (V, C): every token's normed embedding, made once (row-wise)
        self.proj = Linear.of(mod.proj)  # (2C,) -> (C,)
        self.block, self.n_head = block_weights(mod.block), n_head

    def __call__(self, h: torch.Tensor, tokens: list[int], kv: tuple, at: int) -> torch.Tensor:
        """Rows reading (h (T, C), tokens (T,)) written into kv at at..at+T-1, causal after the cache. -> (T, C)"""
        x = self.proj(torch.cat([rms_norm(h, self.hnorm), self.emb[tokens]], dim=-1))
        return lean_block(x, self.block, *kv, at, None, self.n_head)  # None: a chain after the cache, causal


class ModuleCaches:
    """Every module's KV cache and states over the context, kept in step with the target's cache
    (see the module docstring)."""

    def __init__(self, heads: MTPHeads, target: TargetModel, modules: int):
        c: MTPConfig = heads.config
        self.target, self.depth = target, min(modules, c.depth)
        wte, ln_w, ln_b, lm_head = heads.frozen  # the target's, shared by every module
        self.mods = [LeanModule(m, c.n_head, wte) for m in heads.mods[: self.depth]]
        self.ln_f, self.lm_head_t = (ln_w, ln_b), lm_head.t().contiguous()  # (C,) x 2, (C, V)
        target.capture((target.n_layer - 1,))  # h^0: the top block's output, before the first forward
        cap, hs = target.block_size + 64, c.n_embd // c.n_head
        alloc = lambda *shape: torch.zeros(*shape, dtype=target.dtype)  # noqa: E731
        self.kv = [(alloc(c.n_head, cap, hs), alloc(c.n_head, cap, hs)) for _ in self.mods]
        self.states = [alloc(cap, c.n_embd) for _ in range(self.depth + 1)]  # h^0..h^D rows, by entry
        self.true = 0  # h^0 rows copied from the target's features so far
        self.context: list[int] = []  # the window's tokens those rows were copied for
        self.done = [0] * (self.depth + 1)  # per module k (index k; 0 unused): entries its passes computed
        self.seen: list[list[int]] = [[] for _ in range(self.depth + 1)]  # the window's tokens they read
        self.start = 0
        self.fed = [0] * self.depth  # rows fed per module, all rounds (tests, notes)

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(h, (h.size(-1),), *self.ln_f) @ self.lm_head_t  # (..., V)

    def prepare(self, context: list[int]) -> int | None:
        """Sync with the target's cache. -> P, its committed entries, or None with nothing to draft from."""
        t = self.target
        if t.start != window_start(len(context), t.block_size):
            return None  # a window jump: the verify pass re-prefills the cache, read next round
        t.sync(context)  # round 0: the verify pass's own prefill (in a run the engine has done it already)
        if t.start != self.start:
            self.true, self.done, self.start = 0, [0] * (self.depth + 1), t.start
        P = t.length
        now = context[t.start : t.start + P]  # the tokens of the target's entries: h^0_j depends on t_0..t_j
        self.true, self.context = min(self.true, P, agree(self.context, now)), now
        if P == 0:
            return None
        if self.true < P:  # h^0: the features the target committed since
            self.states[0][self.true : P] = t.features(self.true, P)[0]
            self.true = P
        return P

    @torch.no_grad()
    def step(self, k: int, seq: list[int], P: int) -> tuple[torch.Tensor, dict]:
        """Depth k's pass (module k), after depth k - 1's for the same draft. seq: the context and the
        k - 1 tokens drafted so far. -> (h^k at entry P-1 (C,), notes)"""
        now = seq[self.start : self.start + P + k]  # the window's tokens module k reads up to entry P-1: t_{P-1+k}
        lo = min(self.done[k], P, max(0, agree(self.seen[k], now) - k))  # entries j with t_0..t_{j+k} unchanged
        if lo < P:
            rows = now[lo + k :]  # t_{j+k} for j = lo..P-1
            h = self.mods[k - 1](self.states[k - 1][lo:P], rows, self.kv[k - 1], lo)  # (P-lo, C)
            self.states[k][lo:P] = h
            self.fed[k - 1] += P - lo
        self.done[k], self.seen[k] = P, now
        return self.states[k][P - 1], {"depth": k, "rows": P - lo, "scratch": P - max(lo, P - k + 1, 0)}


def agree(a: list[int], b: list[int]) -> int:
    """The length of a's and b's common prefix: one comparison where one extends the other (a run's usual
    case), else a bisection of slice comparisons (each in C, not a Python loop over the tokens)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if a[:mid] == b[:mid] else (lo, mid)
    return lo


class MTPDrafter(Drafter):
    name = "mtp"
    summary = ("one module (a block) per depth, as DeepSeek-V3's multi-token prediction: module k reads depth k − 1's "
               "state and the token k steps on (EAGLE reuses one head); trained here on the frozen target, not with it")  # fmt: skip
    paper = "DeepSeek-V3 multi-token prediction (DeepSeek-AI, 2024, arXiv 2412.19437)"
    glossary = (
        "Multi-token prediction (MTP), as in DeepSeek-V3: besides its own next-token head, the model has D small "
        "modules, one per depth. Module k reads the previous depth's hidden state at the same position and the "
        "embedding of the token k steps on (each through an RMSNorm, then one projection from 2C to C and one "
        "transformer block), and the model's own final norm and output head turn its state into a guess of the "
        "token k + 1 steps on. Drafting, module 1 reads the target's feature of the token before the last and the "
        "last token, and guesses the next; module 2 reads module 1's state and that guess, and guesses one further; "
        "and so on, at most D deep: each depth has its own weights, where EAGLE applies one head again and again. "
        "Each guess is drawn from the module's distribution, so token-wise verification keeps the output exactly "
        "the target's. DeepSeek trains the modules together with the model, and their loss also trains the model "
        "itself to carry plans for later tokens in its features. Here the target is frozen and the modules are "
        "trained afterwards on its features and its own distributions: they can only use what the target already "
        "computes for its next character, so they guess later characters less well than jointly trained ones would "
        "(DeepSeek reports 85–90% acceptance of the second token), and nothing about the target changes."
    )
    needs = frozenset({"target_cache", "heads"})
    panels = ("mtp modules",)
    stateful = True  # bound to one generation's target cache
    draft_cost = DRAFT_COST
    max_depth = MTPConfig.depth  # no module past D

    @classmethod
    def load(cls, settings, checkpoint):
        shared_mtp(checkpoint)  # modules paired with this target

    @classmethod
    def build(cls, src):
        return cls(shared_mtp(src.checkpoint), src.need("target", cls.name), src.settings.mtp_modules)

    def __init__(self, heads: MTPHeads, target: TargetModel, modules: int | None = None):
        self.caches = ModuleCaches(heads, target, modules or heads.config.depth)
        self.max_depth = self.caches.depth

    def draft(self, context, k, temperature, gen):
        P = self.caches.prepare(context) if k > 0 else None
        if P is None:
            return chain([], notes={"skipped": SKIPPED})
        passes = []

        def next_dist(seq):
            h, note = self.caches.step(len(passes) + 1, seq, P)
            passes.append(note)
            return probs_from_logits(self.caches.logits(h), 1.0), {}  # untempered: sample_chain scales

        draft = sample_chain(next_dist, context, min(k, self.caches.depth), temperature, gen)
        qx = [round(float(q[x]), 4) for q, x in zip(draft.q, draft.tokens, strict=True)] if draft.q is not None else []
        draft.notes = {"modules": self.caches.depth, "entries_cached": P, "passes": passes,
                       "predicted": [{"depth": i + 1, "token": x, "q": qx[i] if qx else 1.0}
                                     for i, x in enumerate(draft.tokens)]}  # fmt: skip
        return draft
