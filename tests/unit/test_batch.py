"""Batching changes no output: each sequence of a batch (its own prompt, settings, seed, drafter and cache)
produces exactly what it produces alone, tokens at T = 0 and its seed's draws at T > 0, through chains,
trees and window jumps; its cache after every round equals a fresh prefill; and one pass carries every
live sequence's rows. On the shipped float32 checkpoints: the kernels compute every row on its own, so
the equality is bit for bit (on torch alone the products are blocked, and rows may round apart)."""

from dataclasses import replace

import pytest
import torch
from conftest import GREEDY_TEXT

from specviz.core.batch import Batch, forward_each
from specviz.core.engine import Generation
from specviz.core.settings import Settings
from specviz.drafters import drafter_names
from specviz.drafters.base import tree_mask
from specviz.kernels import native
from specviz.kernels.batched import forward_batch
from specviz.kernels.cached_model import CachedModel
from specviz.teaching.exactness import run_exactness

DRAFTERS = drafter_names()
TREES = set(drafter_names(tree=True))
TEXT = GREEDY_TEXT * 2  # ~440 characters: prompts cut from it at several lengths
# Prompt lengths, in turn: 240, 225 and 370 cross a window jump (256, 384) within 40 tokens.
LENGTHS = (240, 30, 225, 100, 370, 160, 250, 60)


@pytest.fixture(autouse=True)
def kernels():
    if native.kernel() is None:
        pytest.skip(f"bit-for-bit rows need the kernels: {native.backend()}")


def requests(target, drafters, temperature, new_tokens=40):
    """One request per drafter: prompts of different lengths (some cross block_size within the run),
    K from 2 to 5, each its own seed; temperature None alternates 0 and 1 within the batch."""
    out = []
    for i, d in enumerate(drafters):
        prompt = target.tokenizer.encode(TEXT[: LENGTHS[i % len(LENGTHS)]])
        T = (i % 2) * 1.0 if temperature is None else temperature
        out.append((prompt, Settings(drafter=d, k=2 + i % 4, temperature=T, max_new_tokens=new_tokens, seed=100 + i)))
    return out


def rounds(trace):
    """What a round drew and decided: its draft, its accepted path and what it emitted."""
    return [(r.draft_tokens, r.draft_parents, r.accepted_path, r.emitted) for r in trace.rounds]


def check_alone_equals_batched(target, tiny, reqs):
    alone = [Generation(target, p, s, tiny.model).run() for p, s in reqs]
    batch = Batch.of(target, reqs, tiny.model)
    together = batch.run()
    for (_, s), a, b in zip(reqs, alone, together, strict=True):
        assert b.tokens == a.tokens, f"{s.drafter} at T={s.temperature} diverged inside the batch"
        assert rounds(b) == rounds(a), f"{s.drafter} at T={s.temperature}: other draws inside the batch"
    assert batch.passes == max(len(a.rounds) for a in alone)  # one pass a round for the whole batch
    return alone, batch


@pytest.mark.parametrize("temperature", [0.0, 1.0, None], ids=["T0", "T1", "mixed"])
@pytest.mark.parametrize("B", [1, 3, 8])
def test_batched_equals_alone(target, tiny, B, temperature):
    offset = {1: 1, 3: 5, 8: 9}[B]  # different drafters at each size, chains and trees among them
    drafters = [DRAFTERS[(offset + j) % len(DRAFTERS)] for j in range(B)]
    assert B == 1 or (set(drafters) & TREES and set(drafters) - TREES)
    alone, _ = check_alone_equals_batched(target, tiny, requests(target, drafters, temperature))
    if B == 8:
        assert any(r.reprefill and r.index for a in alone for r in a.rounds)  # a window jump inside the run


def test_every_drafter_in_one_batch(target, tiny):
    """All the drafters side by side, T mixed: each keeps its own random stream, acceptance is ragged."""
    alone, batch = check_alone_equals_batched(target, tiny, requests(target, DRAFTERS, None, new_tokens=30))
    per_round = [[len(r.accepted_path) for r in a.rounds[:3]] for a in alone]
    assert len({tuple(x) for x in per_round}) > 1  # sequences accepted different lengths in the same rounds
    assert max(batch.rows) > len(DRAFTERS)  # speculative rows: more than one a sequence


@torch.no_grad()
def test_cache_after_every_round_equals_a_fresh_prefill(target, tiny):
    drafters = ["distilled-tree", "eagle3", "lookahead", "none"]
    reqs = requests(target, drafters, 1.0, new_tokens=60)
    batch = Batch.of(target, reqs, tiny.model)
    jumps = 0
    while not batch.done:
        for g, r in zip(batch.generations, batch.step(), strict=True):
            if r is None:
                continue
            jumps += bool(r.reprefill and r.index)
            kept = g.tokens[r.window_start : -1]  # the round's window (the next round moves it, if it must)
            fresh = CachedModel(target.model)  # a prefill of that window, in one pass
            fresh.forward(kept, list(range(len(kept))), logits=False)
            fresh.keep(list(range(len(kept))), kept)
            assert g.target.cached == kept and g.target.start == r.window_start
            for (k1, v1), (k2, v2) in zip(g.target.kv_cache(), fresh.kv_cache(), strict=True):
                assert torch.equal(k1, k2) and torch.equal(v1, v2)
    assert jumps >= 1


@torch.no_grad()
def test_one_pass_gives_each_sequence_its_own_logits_and_features(target):
    """forward_batch against one forward per sequence: caches of different lengths, a single row, a
    chain and a tree in one pass; the logits, the scratch written and the captured features, bit for bit."""
    contexts = [target.tokenizer.encode(TEXT[:n]) for n in (40, 130, 250)]
    tree = tree_mask([-1, 0, 0, 1])  # (5, 5) over [root + 4 nodes]
    passes = [([7], None), ([7, 8, 9, 10], None), ([7, 8, 9, 10, 11], tree)]

    def caches():
        out = []
        for ctx in contexts:
            c = CachedModel(target.model)
            c.capture((1, 3))
            c.sync(ctx)
            out.append(c)
        return out

    def args(cs):
        return [(toks, list(range(c.length, c.length + len(toks))), m) for c, (toks, m) in zip(cs, passes, strict=True)]

    one, many = caches(), caches()
    together = forward_batch(one, args(one))
    apart = forward_each(many, args(many))
    for a, b, c1, c2 in zip(together, apart, one, many, strict=True):
        assert torch.equal(a, b)
        assert c1._new == c2._new
        n = c1.length + c1._new
        assert torch.equal(c1.kv_buf[:, :, :, :n], c2.kv_buf[:, :, :, :n])
        assert torch.equal(c1.features(0, n), c2.features(0, n))


def test_finished_sequences_sit_out(target, tiny):
    reqs = [
        (p, replace(s, max_new_tokens=n))
        for (p, s), n in zip(requests(target, ["none"] * 3, 0.0), (3, 9, 6), strict=True)
    ]
    batch = Batch.of(target, reqs, tiny.model)
    batch.run()
    assert batch.passes == 9 and batch.rows[3:] == [2, 2, 2, 1, 1, 1]  # plain decoding: a row per live sequence
    assert batch.busy[1] == 9  # full for 3 passes of 3 sequences; from the 4th a slot sat idle
    assert [len(g.trace.rounds) for g in batch.generations] == [3, 9, 6]


def test_a_batch_that_finishes_together_is_busy_to_its_end(target, tiny):
    """Sequences of one length (plain decoding) fill every pass to the last: the busy part is the whole run."""
    reqs = [(p, replace(s, max_new_tokens=5)) for p, s in requests(target, ["none"] * 4, 0.0)]
    gens = [Generation(target, p, s, tiny.model) for p, s in reqs]
    batch = Batch(gens[:2])
    batch.run(gens[2:])
    assert batch.passes == 10 and batch.busy[1] == 20


def test_a_waiting_request_takes_the_first_free_slot(target, tiny):
    """Continuous batching (Batch.run's queue): a finished sequence's slot goes to the next request at once, the
    batch never holds more sequences than its slots, and every request produces what it produces alone."""
    lengths = (3, 9, 6, 4, 5)  # plain decoding: one round a token, so each sequence's life is its length
    reqs = [(p, replace(s, max_new_tokens=n))
            for (p, s), n in zip(requests(target, ["none"] * 5, 0.0), lengths, strict=True)]  # fmt: skip
    gens = [Generation(target, p, s, tiny.model) for p, s in reqs]
    for g in gens:
        g.target.sync(g.tokens)  # each prompt's cache made before (as the bench does): a pass's rows are its rounds'
    batch = Batch(gens[:2])
    traces = batch.run(gens[2:])
    # slot 1: 3, then request 3 (6 tokens) at pass 4, then request 5 (5) at pass 10; slot 2: 9, then request 4
    # (4) at pass 10: both slots busy to pass 13, then one row to pass 14
    assert batch.passes == 14 and batch.rows[:13] == [2] * 13 and batch.rows[13:] == [1]
    seconds, tokens = batch.busy  # the steady state: up to the first pass a slot had no request left
    assert tokens == 26 and seconds > 0
    assert [len(t.rounds) for t in traces] == list(lengths) and batch.generations == gens
    alone = [Generation(target, p, s, tiny.model).run() for p, s in reqs]
    assert [t.tokens for t in traces] == [a.tokens for a in alone]


def test_exactness_lab_inside_a_batch_draws_what_it_draws_alone(tiny):
    """The lab's runs decoded 8 at a time: the same samples, so the same counts, as one at a time."""
    prompt = tiny.tokenizer.encode("the cat sat on the mat.\nthe cat sat on the")
    for drafter in ("trigram", "trie"):
        settings = Settings(drafter=drafter, k=4, temperature=1.0, seed=50)
        one = run_exactness(tiny, prompt, settings, samples=24)
        eight = run_exactness(tiny, prompt, settings, samples=24, batch_size=8)
        assert torch.equal(one.observed, eight.observed) and torch.equal(one.pit_counts, eight.pit_counts)


def test_a_batch_of_trigram_drafters_shares_one_smoothed_table(target):
    """Every sequence's trigram drafter reads the checkpoint's one smoothed table (specviz/drafters/bigram.py
    counts_of), and sampled rounds leave it as built: the rows they draw from are views of it."""
    from specviz.drafters.bigram import laplace

    prompt = target.tokenizer.encode(GREEDY_TEXT)[:40]
    gens = [Generation(target, prompt, Settings(drafter="trigram", k=3, temperature=1.0, max_new_tokens=12, seed=i))
            for i in range(4)]  # fmt: skip
    tables = {id(g.drafter.counts) for g in gens} | {id(g.drafter.bigram.counts) for g in gens}
    assert len(tables) == 2  # one trigram table and one bigram table for all four
    Batch(gens).run()
    assert torch.equal(gens[0].drafter.counts.table, laplace(target.trigram_counts))
    assert torch.equal(gens[0].drafter.bigram.counts.table, laplace(target.bigram_counts))
