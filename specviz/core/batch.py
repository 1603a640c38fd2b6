"""Batched decoding: B independent generations (each its own prompt, settings, seed, drafter and KV
cache) decoded together, one round of every sequence at a time, with ONE target pass for all of them.

    draft   each sequence drafts on its own (Generation.begin): its chain or tree, or nothing
    verify  one target pass over every sequence's rows (plain decoding: one row each; speculative: the
            root and the draft, a prefill round's context first), each attending to its own cache
    accept  each sequence accepts on its own (Generation.finish): acceptance is ragged, each keeps its
            own accepted length, trims its own cache and draws from its own random stream

So a sequence produces exactly what it produces alone: the same tokens at T = 0 and the same draws at
T > 0 (its stream sees the same calls in the same order, and the pass gives it the same logits bit for
bit: specviz/kernels/batched.py). A sequence that is done sits out; window jumps happen per sequence
(a jumping sequence's pass carries its re-prefill).

With ``load`` (specviz/adaptive/load.py), the sequences whose K is adaptive are priced for the batch: each
round, K is chosen for what a sequence's round costs in a batch of this size (its share of the pass, the
CPU its own round costs beside it, its drafting as measured here), and may fall to 0 under load. Their K then differs
from what they choose alone (that is the point), and their output stays exact: K is fixed before the draft. Tests: tests/unit/test_batch.py.

The target seam: a TargetModel class with ``forward_batch(targets, passes)`` (``BatchTarget``) runs the
rows in one pass; any other runs them one forward per sequence (the same outputs, no sharing).
"""

import time
from typing import Protocol

import torch

from models.checkpoint import Checkpoint
from specviz.adaptive.load import LoadCosts
from specviz.core.engine import Generation
from specviz.core.record import RoundRecord, Trace
from specviz.core.settings import Settings
from specviz.core.target import TargetModel
from specviz.kernels.batched import forward_batch
from specviz.kernels.cached_model import CachedModel

# Targets that run several sequences' rows in one pass: their class -> its forward_batch
BATCHED = {CachedModel: forward_batch}


class BatchTarget(Protocol):
    """What a one-pass batch needs of a target class beside TargetModel's members."""

    @staticmethod
    def forward_batch(targets: list[TargetModel], passes: list[tuple]) -> list[torch.Tensor]:
        """passes[i] = (tokens, positions, tree_mask) after targets[i]'s cache, as forward. -> per sequence (T_i, V)"""


def forward_each(targets: list[TargetModel], passes: list[tuple]) -> list[torch.Tensor]:
    """A target with no batched pass: one forward per sequence (the same logits; nothing shared)."""
    return [t.forward(*p) for t, p in zip(targets, passes, strict=True)]


class Batch:
    """B generations decoded together. ``step`` runs one round of every sequence that is not done, with
    one target pass; each generation keeps its own trace (``generations[i].trace``)."""

    def __init__(self, generations: list[Generation], load: LoadCosts | None = None):
        """``load``: adaptive K's prices per batch size (specviz/adaptive/load.py); each round, the sequences
        with adaptive K are priced for the sequences live in it. None: each prices its rounds as if alone."""
        if not generations:
            raise ValueError("a batch needs at least one sequence")
        self.generations = generations
        kind = type(generations[0].target)
        same = all(type(g.target) is kind for g in generations)
        batched = (getattr(kind, "forward_batch", None) or BATCHED.get(kind)) if same else None
        self.forward = batched or forward_each
        self.load = load
        self.passes = 0  # target passes run
        self.rows: list[int] = []  # rows each pass carried
        self.pass_s = 0.0  # seconds in the target passes, by ``clock``
        self.clock = time.perf_counter  # wall time; a bench on one thread may time CPU instead (adaptive/load.py clock)
        self.prefilled = 0  # rows of context the passes prefilled (the prompts', the window jumps')
        self.elapsed = 0.0  # seconds in its own rounds (``step``), by ``clock``: a bench may interleave batches
        self.slots = len(generations)  # sequences decoded together while requests wait (``admit``)
        self.busy: tuple[float, int] | None = None  # (seconds, tokens) while every slot had a sequence (``admit``)

    @classmethod
    def of(cls, target: Checkpoint, requests: list[tuple[list[int], Settings]], draft_model=None) -> "Batch":
        """One generation per (prompt, settings)."""
        return cls([Generation(target, prompt, settings, draft_model) for prompt, settings in requests])

    @property
    def done(self) -> bool:
        return all(g.done for g in self.generations)

    def step(self) -> list[RoundRecord | None]:
        """One round of every sequence not yet done, with one target pass. -> each sequence's round
        (None for one that was done)"""
        t0 = self.clock()
        live = [g for g in self.generations if not g.done]
        if not live:
            raise RuntimeError("the batch is complete")
        if self.load is not None:
            prices = {}  # drafter -> its price in a batch of this size: the same for each of its sequences
            for g in live:
                if g.adaptive is not None and not g.never_drafts:
                    d = g.settings.drafter
                    if d not in prices:
                        prices[d] = self.load.price(len(live), d)
                    g.adaptive.price_for(*prices[d])
        drafted = [g.begin() for g in live]
        passes = [(d.vp.tokens, d.vp.positions, d.vp.mask) for d in drafted]
        t1 = self.clock()
        logits = self.forward([g.target for g in live], passes)
        t2 = self.clock()
        self.pass_s += t2 - t1
        self.passes += 1
        self.rows.append(sum(len(p[0]) for p in passes))
        self.prefilled += sum(d.vp.prefix for d in drafted)
        records = {id(g): g.finish(d, lg, t2 - t1) for g, d, lg in zip(live, drafted, logits, strict=True)}
        self.elapsed += self.clock() - t0
        return [records.get(id(g)) for g in self.generations]

    def run(self, waiting: list[Generation] = ()) -> list[Trace]:
        """Decode until every sequence is done. ``waiting``: requests that take a sequence's place as soon as
        it is done (continuous batching, as a server keeps its slots busy), so the batch stays this many sequences
        until the queue is empty; ``busy`` is then set (``admit``). -> every generation's trace, in the order
        admitted."""
        queue = list(waiting)
        while queue or not self.done:
            self.admit(queue)
            self.step()
        self.admit(queue)
        return [g.trace for g in self.generations]

    def admit(self, queue: list[Generation]) -> None:
        """Before a round: move requests from ``queue`` into the slots of sequences that are done. The first
        time a slot finds none left, ``busy`` = (seconds in the rounds so far, tokens emitted so far): the part
        of the run at this batch size, a server's steady state (after it, the last requests drain in passes the
        batch no longer fills). Called once the batch is done, it sets ``busy`` if no slot ever sat idle."""
        free = self.slots - sum(not g.done for g in self.generations)
        admitted = queue[:free]
        self.generations += admitted
        del queue[:free]
        if self.busy is None and len(admitted) < free:
            tokens = sum(len(r.emitted) for g in self.generations for r in g.trace.rounds)
            self.busy = self.elapsed, tokens
