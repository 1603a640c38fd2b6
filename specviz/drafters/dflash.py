"""Parallel drafting after DFlash (Chen et al., 2026): a one-block head fills K slots in ONE pass from the
target's own features (models/dflash.py), so the draft costs about the same at K = 1 and K = 8.

The head's cache is the EAGLE head's (specviz/drafters/eagle.py, HeadCache): one entry per target cache entry,
reading the features the verify pass already wrote, fed as the target commits them. A round is one head pass
over [the entries committed since the last round (causal; the last is the root's row, slot 1) | K - 1 mask
rows (slots 2..K: the root row's input plus a learned mask embedding each, seeing every context entry and
each other)]. The mask rows are scratch after the entries, overwritten next round. Round 0, a window jump and
a one-token context are EAGLE's: the prefill is the verify pass's own (the engine runs it before the draft), a
jump drafts nothing that round. The entries' inputs are LeanHead.entries: fc folded into the fusion; the
entries before the root only write their keys and values (lean_block's keys_only): nothing reads their outputs.

Exact at every temperature. Slot s's token is drawn from q_s, the head's temperature-scaled distribution for
that slot, and q_s is Draft.q's row s: token-wise verification accepts x_s with min(1, p_s(x_s)/q_s(x_s)) and
resamples from the residual, which is lossless for ANY proposal q_s that does not depend on the target. That
q_s ignores the slots drawn before it (the slots are filled in parallel, not one after another) changes how
often a slot is accepted, never what comes out. At T = 0 each slot proposes its argmax, q one-hot (None): greedy.

The K slots, each slot's distribution and the accepted prefix are the step page's "parallel slots" panel.
"""

import weakref

import torch
from torch.nn import functional as F

from models.dflash import DFlashHead, load_dflash
from specviz.core.sampling import draw_rows, scale_probs
from specviz.core.target import TargetModel
from specviz.drafters.base import Draft, Drafter, chain
from specviz.drafters.eagle import SKIPPED, HeadCache
from specviz.kernels.attention import attn_bias
from specviz.kernels.cached_model import lean_block

SLOTS = 8  # the shipped head's block: the deepest draft one pass fills
TOP = 4  # tokens shown per slot in the notes (the step page's panel)

_HEADS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def shared_dflash(checkpoint) -> DFlashHead:
    """The shipped head for this target Checkpoint, loaded (and its hashes checked) once per target model."""
    if checkpoint.model not in _HEADS:
        _HEADS[checkpoint.model] = load_dflash(checkpoint)
    return _HEADS[checkpoint.model]


class BlockCache(HeadCache):
    """HeadCache plus the block pass: the new context entries and the mask rows in one head pass."""

    def __init__(self, head: DFlashHead, target: TargetModel):
        super().__init__(head, target)
        self.mask = head.mask.detach()  # (block - 1, C) the mask rows' embeddings
        self._bias: dict[tuple[int, int], torch.Tensor] = {}  # (T, M) -> (T + M, D + T + M): see bias()

    @torch.no_grad()
    def block(self, context: list[int], slots: int) -> tuple[torch.Tensor, dict] | None:
        """Feed the entries committed since the last round and fill ``slots`` slots after the root, in one
        pass. -> (logits (slots, V), notes), or None with nothing to read (see the module docstring)."""
        t, lean = self.target, self.lean
        moved = self.catch_up(context)
        if moved is None:
            return None
        P, n = t.length, self.n
        T, M = P - n, slots - 1
        first = n if T else P - 1  # asked again for the same context (a shadow draft): the root row's input again
        tokens = context[t.start + first + 1 : t.start + P + 1]  # ends with the root
        u = lean.entries(t.features(first, P), tokens)  # (T or 1, C)
        rows = torch.cat([u[:T], u[-1:] + self.mask[:M]]) if M else u[:T]  # (T + M, C)
        self.fit(P + M)
        # None: causal, the entries alone; else the entries causal and blind to the masks, the mask rows seeing
        # every entry and each other
        bias = self.bias(n, T, M) if M else None  # (T + M, P + M)
        # (T + M - skip, C): the entries before the root only write their keys and values, nothing reads their outputs
        skip = max(T - 1, 0)
        h = lean_block(rows, lean.block, *self.kv, n, bias, lean.config.n_head, keys_only=skip) if T + M else rows
        if T:
            self.n, self.fed, self.last = P, self.fed + T, h[:1]
            out = h  # [the root's row | the mask rows]
        else:
            out = torch.cat([self.last, h])
        return lean.logits(out), {  # (slots, V)
            "entries_fed": T,
            "entries_cached": P,
            "reprefill": moved,
            "mask_rows": M,
            "passes": int(T + M > 0),
        }

    def bias(self, n: int, T: int, M: int) -> torch.Tensor:
        """attn_bias(n, the block's pattern over its T entries and M mask rows) as a view of a buffer built once
        per (T, M): D zero columns (any context entry may be seen), then the pattern; the view starts n columns
        before the pattern. A round's mask cost ~0.08 of a target pass to build (docs/notes/parallel.md); the
        view holds the same numbers. Kept only for an ordinary round's few entries (at most K + 1 <= SLOTS + 1).
        -> (T + M, n + T + M), rows strided (the kernel reads stride(0))"""
        buf = self._bias.get((T, M))
        if buf is None or buf.size(1) - (T + M) < n:
            new = torch.zeros(T + M, T + M, dtype=torch.bool)
            new[:T, :T] = torch.ones(T, T, dtype=torch.bool).tril()  # the entries: causal, blind to the masks
            new[T:] = True  # the mask rows: every new entry and each other
            if T > SLOTS + 1:  # a prefill or a re-feed after a window jump: rare and wide, not kept
                return attn_bias(n, new, self.target.dtype)
            buf = self._bias[(T, M)] = attn_bias(max(n, self.kv[0].size(1)), new, self.target.dtype)
        return buf[:, buf.size(1) - (T + M) - n :]


class DFlashDrafter(Drafter):
    name = "dflash"
    summary = "a one-block head fills K masked slots in one pass from the target's own features: cost flat in K"
    paper = "DFlash: Block Diffusion for Flash Speculative Decoding (Chen et al., 2026)"
    glossary = (
        "Parallel drafting (DFlash, PARD, P-EAGLE) proposes all K characters in one pass of a small network instead "
        "of K passes one after another. Here a one-block head reads the target's own hidden features, which the "
        "verify pass has already computed, and fills a block of K slots at once: the first from the root "
        "character, the others from learned mask embeddings that see the whole context and each other. Each slot "
        "has its own distribution and its character is drawn from it, so verified token by token the output is "
        "exactly the target's. The slots do not see each other's drawn characters, so later slots are accepted less "
        "often than a chain drafter's, but the draft costs about the same at K = 1 and K = 8."
    )
    needs = frozenset({"target_cache", "heads"})
    panels = ("parallel slots",)
    stateful = True  # bound to one generation's target cache
    max_depth = SLOTS
    # In target forward units: one head pass per round whatever K (the call), a draw and a note per slot. Adaptive
    # K's priors, set above what a real round measures (~0.45-0.55 in all at K <= 8: docs/notes/parallel.md).
    call_cost = 0.7
    draft_cost = 0.03

    @classmethod
    def load(cls, settings, checkpoint):
        shared_dflash(checkpoint)  # a head paired with this target

    @classmethod
    def build(cls, src):
        return cls(shared_dflash(src.checkpoint), src.need("target", cls.name))

    def __init__(self, head: DFlashHead, target: TargetModel):
        self.head, self.cache = head, BlockCache(head, target)

    def slots(self, context: list[int], k: int) -> tuple[torch.Tensor, dict] | None:
        """The untempered distribution of each of min(k, block) slots after the root, (S, V), and notes."""
        ready = self.cache.block(context, min(k, self.head.config.block)) if k > 0 else None
        if ready is None:
            return None
        logits, notes = ready
        return F.softmax(logits, dim=-1, dtype=torch.float64), notes  # probs_from_logits(logits, 1.0), two ops fewer

    def draft(self, context, k, temperature, gen):
        ready = self.slots(context, k)
        if ready is None:
            return chain([], notes={"head": self.name, "skipped": SKIPPED})
        probs, notes = ready
        top = probs.topk(min(TOP, probs.size(-1)), dim=-1)
        ranked = top.indices.tolist()  # (S, TOP) each slot's likeliest tokens, best first
        if temperature == 0:  # each slot's most likely token; q one-hot (None): no draw, no (S, V) rows built
            tokens, q, qx = [r[0] for r in ranked], None, [1.0] * len(ranked)
        else:
            q = scale_probs(probs, temperature)  # (S, V) what each slot's token is drawn from
            tokens, rows = draw_rows(q, gen)
            qx = ([r[x] for r, x in zip(rows, tokens, strict=True)] if rows is not None
                  else q[torch.arange(len(tokens)), tokens].tolist())  # fmt: skip
        notes["slots"] = slot_notes(ranked, top.values, tokens, qx, drawn=temperature > 0)
        return Draft(tokens, list(range(-1, len(tokens) - 1)), q, {"head": self.name, **notes})


def slot_notes(ranked: list[list[int]], p: torch.Tensor, tokens: list[int] | None = None, qx=None,
               drawn: bool = True) -> dict:  # fmt: skip
    """The step page's "parallel slots" panel, by column (a dict of 8 rows cost a round ~0.02 of a target pass):
    each slot's top tokens ``ranked`` (S, TOP) and their head probabilities ``p`` (S, >= TOP); for a chain, the
    token each slot proposed, its q, and whether it was drawn (False: each slot's top-1, at T = 0)."""
    notes = {"top": ranked, "p": p[:, : len(ranked[0])].round(decimals=4).tolist()}  # (S, TOP) each
    if tokens is not None:
        notes |= {"token": tokens, "q": [round(x, 4) for x in qx], "drawn": drawn}
    return notes
