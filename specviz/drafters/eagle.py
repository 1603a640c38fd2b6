"""EAGLE drafts (EAGLE-1, Li et al. 2024; EAGLE-3, Li et al. 2025): a one-block head drafts from the
target's own hidden features (models/eagle.py), read from the target's KV cache at no extra pass.

The target's CachedModel captures, per cache entry, the residual stream after the blocks the head
reads (CachedModel.capture, asked for in __init__, before the first forward). The cache holds the
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
    round 0            the target's cache is empty: target.sync(context) runs the prefill here,
                       the one the verify pass would run anyway (the engine's sync then finds it
                       done), as layer-skip does.
    window jump        (every half block past block_size) the target's cache is stale: that round
                       is not drafted (an empty draft), the verify pass re-prefills the cache, which
                       recomputes the features, and the head re-feeds them next round. So the round
                       records its re-prefill truthfully, and nothing is prefilled twice.

q is the temperature-scaled head distribution each token was drawn from (one-hot argmax at T = 0),
so verification stays lossless whatever the head predicts.

draft_cost (target-forward units per drafted token): ~0.5, measured two ways on this project's 2-core CPU
while other jobs ran (load average 5-7, so timings are rough): bench-style runs (specviz.bench.run_bench,
the three QUICK presets, 64 new tokens, K = 4, 3 repeats) gave draft c 0.46 (eagle1) and 0.84 (eagle3)
at T = 0, 0.76 and 0.72 at T = 0.8, where the first round's prefill (done by the drafter) counts as
drafting; cProfile of 20 eagle3 rounds gave 2.7 ms per head step against 11 ms per 5-token verify pass.
A head step is one block plus fc and the target's lm_head, through nn.Module calls (the target's lean
pass is not reused: the head is not a GPT).
"""

import weakref

import torch

from models.eagle import EagleHead, load_head
from specviz.cached_model import CachedModel, window_start
from specviz.drafters.base import Drafter, chain, sample_chain
from specviz.sampling import probs_from_logits

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


class HeadCache:
    """The head's KV cache over the context, kept in step with the target's cache."""

    def __init__(self, head: EagleHead, target: CachedModel):
        self.head, self.target = head, target
        target.capture(head.config.layers)
        self.kv = None  # the block's (k, v), each (1, nh, n, hs), true-feature entries only
        self.start, self.n = 0, 0
        self.last = None  # the head's state at its last entry (the one that drafts after the root)
        self.fed = 0  # entries fed through the head, all rounds (tests: the context is fed once)

    @torch.no_grad()
    def prepare(self, context: list[int]) -> tuple[torch.Tensor, tuple, dict] | None:
        """Feed the entries the target committed since the last round. -> (h (1, 1, C) the state that
        drafts the token after the root, the head's kv, notes), or None with no entry to read."""
        t = self.target
        if t.start != window_start(len(context), t.block_size):
            return None  # a window jump: the verify pass re-prefills the cache and its features, read next round
        moved = t.sync(context)  # round 0: the verify pass's own prefill, done now
        if t.start != self.start:
            self.kv, self.n, self.start = None, 0, t.start
        P, n = t.length, self.n
        if P == 0:
            return None
        if n == P:  # asked again for the same context (adaptive K's shadow draft): nothing new to feed
            return self.last, self.kv, {"entries_fed": 0, "entries_cached": P, "reprefill": moved, "width": self.last.size(-1),
                                        "layers": list(self.head.config.layers), "feature_rows": []}  # fmt: skip
        feats = t.features(n, P)[:, None]  # (F, 1, P - n, C), entries n..P-1
        tokens = torch.tensor(context[t.start + n + 1 : t.start + P + 1])[None]  # (1, P - n) ends with the root
        T = P - n
        mask = torch.ones(T, n + T, dtype=torch.bool).tril(n) if n and T > 1 else None  # causal after the past
        g = self.head.fused(feats)  # (1, T, C)
        h, self.kv = self.head.step(g, tokens, self.kv, mask)  # (1, T, C)
        self.n, self.fed, self.last = P, self.fed + T, h[:, -1:]
        first = max(0, T - FEATURE_ROWS)
        notes = {"entries_fed": T, "entries_cached": P, "reprefill": moved, "layers": list(self.head.config.layers),
                 "width": g.size(-1),
                 "feature_rows": [{"entry": n + i, "token": context[t.start + n + i + 1], "values": rounded(g[0, i])}
                                  for i in range(first, T)]}  # fmt: skip
        return self.last, self.kv, notes


class EagleDrafter(Drafter):
    name = "eagle3"
    stateful = True  # bound to one generation's target cache
    draft_cost = DRAFT_COST

    def __init__(self, head: EagleHead, target: CachedModel, name: str = "eagle3"):
        self.name, self.head = name, head
        self.cache = HeadCache(head, target)

    def draft(self, context, k, temperature, gen):
        ready = self.cache.prepare(context) if k > 0 else None
        if ready is None:
            return chain([], notes={"head": self.name, "skipped": SKIPPED})
        h, kv, notes = ready
        state = {"h": h, "kv": kv, "steps": 0}

        @torch.no_grad()
        def next_dist(seq):
            if state["steps"]:  # step j >= 1: the head's own state and the token it drew
                token = torch.tensor([[seq[-1]]])
                state["h"], state["kv"] = self.head.step(state["h"], token, state["kv"])
                notes["feature_rows"].append(
                    {"step": state["steps"], "token": seq[-1], "values": rounded(state["h"][0, 0])}
                )
            state["steps"] += 1
            probs = probs_from_logits(self.head.logits(state["h"][0, 0]), 1.0)  # untempered: sample_chain scales
            return probs, {}

        draft = sample_chain(next_dist, context, k, temperature, gen)
        qx = [round(float(q[x]), 4) for q, x in zip(draft.q, draft.tokens, strict=True)] if draft.q is not None else []
        draft.notes = {"head": self.name, **notes, "passes": state["steps"],
                       "predicted": [{"token": x, "q": qx[i] if qx else 1.0} for i, x in enumerate(draft.tokens)]}  # fmt: skip
        return draft
