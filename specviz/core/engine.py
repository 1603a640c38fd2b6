"""The step-through engine: one call of ``Generation.step()`` is one speculative round.

    draft   the drafter proposes a chain or tree from the context
    verify  one target forward pass over [last token + draft] (tree attention for trees), plus any
            extra tokens the drafter asked for (Draft.extra: lookahead's window), unseen by the draft
    accept  accept/reject each drafted token; correction from the residual or bonus token
    trim    the target's cache keeps the last token and the accepted path, nothing else

Every round returns a RoundRecord; ``Session`` (session.py) keeps them so the app can go back and
forth without recomputing.
"""

import threading
import time
from dataclasses import asdict, dataclass

import torch

from models.checkpoint import Checkpoint
from specviz.adaptive.costs import REFERENCE, CostCurve
from specviz.adaptive.policy import AdaptiveK
from specviz.core.record import FULL_LIMIT, RoundRecord, Trace, compact
from specviz.core.sampling import Stream, probs_from_logits
from specviz.core.settings import Settings
from specviz.core.target import TargetModel, room, window_start
from specviz.drafters import Drafter, Sources, make_drafter
from specviz.drafters.base import Draft, chain, tree_mask
from specviz.verifiers import expected_acceptance, get_verifier

IDLE = "chose K = 0: the drafter was not asked"
STOPPED_AT_ONCE = "K = 0: the first token's chance of acceptance did not pay for a draft"
IDLE_FOR_GOOD = ("chose K = 0, as it will every round (too costly to shadow, so nothing new is learnt): "
                 "the drafter is neither asked nor updated, and the target keeps no features for it")  # fmt: skip


@dataclass
class VerifyPass:
    """The inputs of a round's one target forward (``pass_inputs``), and how its logits split."""

    tokens: list[int]  # prefix, root, nodes, extras: what the forward runs (M+N+1+E,)
    positions: list[int]  # their positions (M+N+1+E,)
    mask: torch.Tensor | None  # (M+N+1+E, M+N+1+E) True = may attend; None causal
    prefix: int  # M: the context tokens the cache lacked, fed first (a prefill round's)
    nodes: int  # N+1: the root and the draft's nodes
    draft_positions: list[int]  # positions of root, nodes and extras (N+1+E,)
    tree: torch.Tensor | None  # the tree mask (N+1, N+1) over [root + nodes], None for a chain
    extra: bool  # the draft has extra tokens (Draft.extra)

    def split(self, logits: torch.Tensor):
        """The forward's logits (M+N+1+E, V), or (N+1+E, V) from a forward told to skip the prefix's rows
        -> (logits (N+1, V) of root and nodes, logits (1+E, V) of the root and the extras or None)"""
        rows = len(self.tokens) - self.prefix
        assert len(logits) in (rows, len(self.tokens)), "logits of every row, or of the rows after the prefix"
        logits = logits[len(logits) - rows :]
        if not self.extra:
            return logits, None
        n = self.nodes
        return logits[:n], logits[[0, *range(n, len(self.draft_positions))]]


def pass_inputs(target: TargetModel, root: int, draft: Draft, prefix: list[int] = ()) -> VerifyPass:
    """The round's one target forward: the context tokens the cache lacks (``prefix``: a prefill
    round's, else none), then [root + draft nodes] (tree attention for a tree), then the draft's extra
    tokens if it has any (Draft.extra: lookahead's Jacobi window). The prefix is causal and every
    later row sees all of it; the root and the nodes never attend to an extra, so their rows are what
    they would be without them, and (the kernels' rows never depend on the rows beside them) what
    they would be after a separate prefill. Extras are scratch that keep() never commits."""
    M = len(prefix)
    P, n = target.length + M, 1 + len(draft.tokens)
    tree = None if draft.is_chain else tree_mask(draft.parents)  # (N+1, N+1) over [root + nodes]
    tokens, positions, mask = [root] + draft.tokens, [P] + [P + d for d in draft.depths], tree
    extra = draft.extra
    has_extra = extra is not None and bool(extra.tokens)
    if has_extra:
        E = len(extra.tokens)
        mask = torch.zeros(n + E, n + E, dtype=torch.bool)  # root and nodes: never an extra
        mask[:n, :n] = tree if tree is not None else torch.ones(n, n, dtype=torch.bool).tril()
        mask[n:] = extra.mask  # (E, n + E), the drafter's own pattern
        tokens, positions = tokens + extra.tokens, positions + [P + o for o in extra.offsets]
    if M and mask is not None:  # the prefix: causal among itself, seen by every row after it
        T = M + len(tokens)
        full = torch.ones(T, T, dtype=torch.bool).tril()  # (M+T', M+T')
        full[M:, M:] = mask
        mask = full
    return VerifyPass([*prefix, *tokens], [*range(P - M, P), *positions], mask, M, n, positions, tree, has_extra)


def verify_pass(target: TargetModel, root: int, draft: Draft, prefix: list[int] = ()):
    """``pass_inputs`` and the forward. -> (logits (N+1, V) of root and nodes, logits (1+E, V) of the
    root and the extras or None, positions of root, nodes and extras, the tree mask (N+1, N+1) or None
    for a chain)"""
    vp = pass_inputs(target, root, draft, prefix)
    logits, extra_logits = vp.split(target.forward(vp.tokens, vp.positions, vp.mask, skip=vp.prefix))
    return logits, extra_logits, vp.draft_positions, vp.tree


@dataclass
class Drafted:
    """A round between its draft and its verification (``Generation.begin``): what ``finish`` needs."""

    k: int  # the round's K
    draft: Draft
    choice: object  # adaptive K's choice, or None
    shadow: Draft | None  # a draft scored but never verified (adaptive K's idle round)
    reprefill: bool  # the window moved: the pass prefills the context
    kv_before: int  # cache entries before the pass's root
    vp: VerifyPass  # the pass's inputs
    t0: float  # perf_counter at the round's start (after the early prefill)
    t1: float  # ... once drafted
    early: int  # context tokens the target prefilled before the draft (for a drafter that reads its cache)
    early_s: float  # ... and that prefill's time, counted as the verify pass's


class Generation:
    """One speculative generation from a prompt. step() is not thread-safe: sessions that share a
    generation call it holding ``lock`` (see Session)."""

    def __init__(self, target: Checkpoint, prompt: list[int], settings: Settings, draft_model=None, drafter=None,
                 costs: CostCurve = REFERENCE):  # fmt: skip
        """``drafter``: reuse a drafter made for these settings (only one that is not stateful).
        ``costs``: what a verify pass costs on this machine, for adaptive K (specviz/adaptive/costs.py)."""
        settings.check()
        if not prompt:
            raise ValueError("the prompt is empty")
        self.settings = settings
        self.target: TargetModel = target.target_model()  # the model with a fresh KV cache
        assert drafter is None or not drafter.stateful
        self.drafter: Drafter = drafter or make_drafter(Sources(settings, target, prompt, self.target, draft_model))
        self.verifier = get_verifier(settings.verification).configured(settings)
        d = self.drafter
        self.adaptive = None
        if settings.k_auto:  # no deeper than the drafter can draft: E(K) would count levels it never sends
            k_max = min(settings.k, d.max_depth or settings.k)
            self.adaptive = AdaptiveK(k_max, d.draft_cost, d.call_cost, d.verify_extra, d.nodes_per_level, costs,
                                      d.max_nodes, d.level_cost)  # fmt: skip
        # A drafter adaptive K will never consult costs nothing beyond plain decoding: no features
        # captured for a draft head (EAGLE, Medusa), no updates. Decided before the first forward.
        self.never_drafts = self.adaptive is not None and self.adaptive.never_drafts()
        # A drafter that weighs each token before drawing it is stopped token by token (adaptive.Stopper).
        self.stops = (
            self.adaptive is not None and not self.never_drafts and self.drafter.estimates(settings.temperature)
        )
        if self.never_drafts:
            self.target.capture(())
        self.gen = Stream().manual_seed(settings.seed)
        self.tokens = list(prompt)
        self.trace = Trace(asdict(settings), target.tokenizer.pieces, list(prompt))
        self.lock = threading.Lock()

    @property
    def generated(self) -> int:
        return len(self.tokens) - len(self.trace.prompt)

    @property
    def done(self) -> bool:
        return self.generated >= self.settings.max_new_tokens

    @property
    def draft_limit(self) -> int:
        """The next round's K: never overshoot max_new_tokens, never let a round span a window jump."""
        s = self.settings
        return min(s.k, s.max_new_tokens - self.generated - 1, room(len(self.tokens), self.target.block_size))

    def step(self) -> RoundRecord:
        """One round: draft, one target forward, accept and trim."""
        d = self.begin()
        vp = d.vp
        return self.finish(d, self.target.forward(vp.tokens, vp.positions, vp.mask, skip=vp.prefix))

    def begin(self) -> Drafted:
        """A round's draft and the inputs of its target forward, which the caller runs (``step``; a
        batch's one pass over many sequences: specviz/core/batch.py), then hands to ``finish``."""
        if self.done:
            raise RuntimeError("the generation is complete")
        s, T = self.settings, self.settings.temperature
        k = self.draft_limit

        t_early, early = time.perf_counter(), []
        t, L = self.target, len(self.tokens)
        lacks = t.start == window_start(L, t.block_size) and t.start + t.length < L - 1  # not all of context[s:-1]
        if k and lacks and "target_cache" in self.drafter.needs:
            # A drafter that reads the target's cache needs it whole first: round 0's prefill, the one the
            # verify pass would run, is run now and counted as the verify pass's (plain decoding's prefill
            # is), not as the draft's. At a window jump the drafter skips the round and the pass re-prefills.
            # An ordinary round's cache already holds all but the root: nothing to compare or feed.
            _, early = self.target.trim_missing(self.tokens)
            self.target.sync(self.tokens)  # feeds ``early``
        t0 = time.perf_counter()
        choice = shadow = None
        if self.stops:  # adaptive K, token by token: the drafter weighs each token before drawing it
            stopper = self.adaptive.stopper(k)
            draft = self.drafter.draft_until(self.tokens, k, T, self.gen, stopper)
            choice = stopper.result()
            k = choice.k
            if not k:  # asked and stopped at once; or no room for a draft this round (the drafter was not asked)
                draft.notes["adaptive K"] = STOPPED_AT_ONCE if choice.estimates else IDLE
        else:
            if self.adaptive is not None:
                choice = self.adaptive.choose(k)
                if choice.k == 0 and k >= 1 and not self.never_drafts and self.adaptive.idle_round():
                    shadow = self.drafter.shadow(self.tokens, T, self.gen)  # scored below, never verified
                k = choice.k
            if k == 0 and choice is not None:  # adaptive K chose plain decoding: cost nothing beyond it
                draft = chain([], notes={"adaptive K": IDLE_FOR_GOOD if self.never_drafts else IDLE})
            else:
                draft = self.drafter.draft(self.tokens, k, T, self.gen)  # k = 0 too: its notes say why nothing
        depths = draft.depths
        if depths and max(depths) > k:
            raise RuntimeError(f"drafter {s.drafter} proposed {max(depths)} deep, above the limit {k}")

        t1 = time.perf_counter()
        reprefill, prefix = self.target.trim_missing(self.tokens)  # a prefill round's context: in the same pass
        kv_before = self.target.length + len(prefix)
        vp = pass_inputs(self.target, self.tokens[-1], draft, prefix)
        return Drafted(k, draft, choice, shadow, reprefill, kv_before, vp, t0, t1, len(early), t0 - t_early)

    def finish(self, d: Drafted, pass_logits: torch.Tensor, verify_s: float | None = None) -> RoundRecord:
        """Accept and trim, given the forward's logits over ``d.vp`` (M+N+1+E, V). ``verify_s``: the pass's
        time when the caller ran it for many sequences (a batch's), else the time since the draft."""
        t_in = time.perf_counter()
        T, B, L = self.settings.temperature, self.target.block_size, len(self.tokens)
        k, draft, choice, shadow, vp = d.k, d.draft, d.choice, d.shadow, d.vp
        prefix, positions, tree, depths = vp.tokens[: vp.prefix], vp.draft_positions, vp.tree, draft.depths
        logits, extra_logits = vp.split(pass_logits)
        if extra_logits is not None:
            self.drafter.observe(extra_logits)
        p_rows = probs_from_logits(logits, T)  # (N+1, V)
        t2 = time.perf_counter()
        if verify_s is None:  # the pass ran just before: verify_s counts from the draft, softmax included
            verify_s = t2 - d.t1
        else:  # a batch's pass: this sequence's accept counts from here
            t2 = t_in
        verify_s += d.early_s

        verdict = self.verifier.verify(draft, p_rows, T, self.gen)
        path = verdict.path
        M = len(prefix)  # the pass's inputs: prefix, root, nodes
        self.target.keep(
            [*range(M + 1)] + [M + 1 + i for i in path], [*prefix, self.tokens[-1]] + [draft.tokens[i] for i in path]
        )
        emitted = verdict.emitted(draft)
        # Row i of emitted_p predicted emitted[i]: the root's row, then each accepted node's.
        n = len(path)  # a chain's path is a prefix of its nodes: a view, not a gather (~25 us a round)
        emitted_p = p_rows[: n + 1] if path == list(range(n)) else p_rows[[0] + [i + 1 for i in path]]
        update = {} if self.never_drafts else self.drafter.update(self.tokens, emitted, emitted_p)
        self.tokens += emitted
        if self.adaptive is not None and not self.never_drafts:  # never_drafts: nothing left to learn
            if k:  # a round that chose to draft (an idle round was counted as it chose: idle_round)
                self.adaptive.update(k, len(draft.tokens), max(depths, default=0), len(path))
            if shadow is not None and shadow.tokens:
                self.adaptive.observe(expected_acceptance(shadow, p_rows[0]))
        record = RoundRecord(
            index=len(self.trace.rounds),
            context_len=L,
            window_start=window_start(L, B),
            reprefill=d.reprefill,
            kv_before=d.kv_before,
            kv_after_verify=d.kv_before + len(positions),
            kv_after_trim=self.target.length,
            kv_kept=[d.kv_before] + [d.kv_before + 1 + i for i in path],
            draft_tokens=draft.tokens,
            draft_parents=draft.parents,
            draft_positions=positions[: 1 + len(draft.tokens)],
            tree_mask=None if tree is None else tree.tolist(),
            draft_notes=draft.notes,
            positions=verdict.checks,
            accepted_path=path,
            residual=verdict.residual,
            correction=verdict.correction,
            bonus_p=verdict.bonus_p,
            bonus=verdict.bonus,
            emitted=emitted,
            emitted_kinds=["accepted"] * len(path) + ["correction" if verdict.correction is not None else "bonus"],
            drafter_update=update,
            k_choice=choice,
            verify_notes=verdict.notes,
            draft_sampling=draft.sampling,
            prefilled=len(prefix) + d.early,
            draft_s=d.t1 - d.t0,
            verify_s=verify_s,
            extra_tokens=draft.extra.tokens if draft.extra else [],
            extra_positions=positions[1 + len(draft.tokens) :],
        )
        if self.target.vocab_size > FULL_LIMIT:  # a real model's rows: kept as top-k + the rest (record.py)
            compact(record)
        record.accept_s = time.perf_counter() - t2  # accept, trim the cache, update the drafter, record
        self.trace.rounds.append(record)
        return record

    def run(self, progress=None) -> Trace:
        while not self.done:
            self.step()
            if progress:
                progress(self.generated)
        return self.trace
