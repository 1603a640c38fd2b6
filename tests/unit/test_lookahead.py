"""Lookahead decoding: the n-gram pool, the Jacobi window, and the engine's extra tokens, which
must never change what verification sees. Greedy equality and the KV cache after every round come
from the DRAFTERS parametrisation in tests/unit/test_engine.py; exactness from REAL_TARGET_MODES
(tests/statistical/test_exactness_real_target.py); the step page's panel from
tests/app/test_lookahead_panel.py."""

import json
from dataclasses import replace

import plotly.graph_objects as go
import pytest
import torch

from specviz.charts import lookahead as charts
from specviz.charts.kv import kv_ledger as from_kv
from specviz.charts.palette import GREY
from specviz.core.engine import Generation, verify_pass
from specviz.core.settings import Settings
from specviz.drafters.base import chain
from specviz.drafters.lookahead import LookaheadDrafter, NGramPool, ngram_tree, window_extra
from specviz.kernels.cached_model import CachedModel

PROMPT = "the cat sat on the mat.\nthe cat sat on the"


def test_pool_keeps_the_most_recent_g_per_first_token():
    pool = NGramPool(3, 2)
    assert pool.add((1, 2, 3), "prompt") and pool.add((1, 4, 5), "jacobi")
    assert not pool.add((1, 2, 3), "jacobi")  # seen before: moved to the front, its first source kept
    assert pool.candidates(1) == [(2, 3), (4, 5)] and pool.source[(1, 2, 3)] == "prompt"
    assert pool.add((1, 6, 7), "jacobi")
    assert pool.candidates(1) == [(6, 7), (2, 3)] and len(pool) == 2 and pool.candidates(9) == []
    g = torch.Generator().manual_seed(0)
    for gram in torch.randint(4, (300, 3), generator=g).tolist():  # repeats, evictions: the count keeps up
        pool.add(tuple(gram), "jacobi")
        assert len(pool) == sum(map(len, pool.grams.values()))


def test_candidates_merge_shared_prefixes_into_one_tree():
    tokens, parents, origin = ngram_tree([(2, 3, 4), (2, 5, 6), (7, 8, 9), (2, 3, 1)], k=2)
    assert tokens == [2, 3, 5, 7, 8] and parents == [-1, 0, 0, -1, 3] and origin == [0, 0, 1, 2, 2]
    assert ngram_tree([(2, 3)], k=0) == ([], [], [])


def test_the_pool_collects_each_columns_chain_and_the_window_moves_on():
    d = LookaheadDrafter([0, 1], block_size=256, window=3, ngram=3, candidates=4)
    d.levels = [[9, 11, 12], [21, 22, 23]]  # level 0 (cell (0, 0) stands for the root), level 1
    d.preds = [31, 32, 33]  # the top level's predictions, one per column
    notes = d.update([5, 6], [7], None)
    # column i: cell (0, i) (the root for i = 0), cell (1, i), its prediction
    assert notes["collected"] == [[6, 21, 31], [11, 22, 32], [12, 23, 33]] and notes["new"] == 3
    assert d.pool.candidates(6) == [(21, 31)] and d.pool.source[(11, 22, 32)] == "jacobi"
    assert d.levels == [[21, 22, 23], [31, 32, 33]]  # e = 1: each level takes the next one's guesses
    d.preds = [41, 42, 43]
    d.update([5, 6, 7], [8, 9], None)  # e = 2: cell (j, i) takes level j + 1's column i + 1
    assert d.levels == [[32, 33, 33], [42, 43, 43]]  # the right edge repeats its left neighbour
    d.preds = [51]  # only column 0 fitted in the context window: the others keep their guess
    d.update([5, 6, 7, 8, 9], [1], None)
    assert d.levels == [[42, 43, 43], [51, 43, 43]] and d.preds == []


def test_an_idle_round_leaves_the_window_as_advance_would():
    """update() skips the work of a round where no column ran (adaptive K idling) once the levels
    agree; on random windows, settled or not, the window it leaves is advance(1)'s; its notes say
    what changed, nothing when nothing did."""
    g = torch.Generator().manual_seed(1)
    for _ in range(500):
        W, N = int(torch.randint(1, 6, (), generator=g)), int(torch.randint(2, 6, (), generator=g))
        fast, slow = (LookaheadDrafter([0, 1], 256, W, N, 3) for _ in range(2))
        levels = torch.randint(3, (N - 1, W), generator=g).tolist()
        if torch.rand((), generator=g) < 0.5:  # settled: every level the top level's guesses
            levels = [list(levels[-1]) for _ in levels]
        fast.levels, slow.levels = [list(r) for r in levels], [list(r) for r in levels]
        settled = fast.settled()
        notes = fast.update([5, 6], [7], None)
        slow.advance(1)
        assert fast.levels == slow.levels and fast.preds == []
        assert notes == ({} if settled else {"collected": [], "new": 0, "shift": 1, "pool_size": 0})


def test_a_shadow_proposes_a_k1_drafts_tokens_and_lays_out_no_window():
    """Adaptive K scores an idle round's shadow and never verifies it: the same first tokens as
    draft(context, 1), no extras, and the window, untouched, stays for update (even before round 1)."""
    g = torch.Generator().manual_seed(2)
    for _ in range(200):
        prompt = torch.randint(4, (12,), generator=g).tolist()
        d = LookaheadDrafter(prompt, 256, 3, 3, int(torch.randint(1, 4, (), generator=g)))
        for gram in torch.randint(4, (6, 3), generator=g).tolist():
            d.pool.add(tuple(gram), "jacobi")
        context = prompt + torch.randint(4, (3,), generator=g).tolist()
        shadow = d.shadow(context, 0.8, g)
        assert shadow.extra is None and set(shadow.parents) <= {-1} and d.levels is None
        assert d.update(context, [1], None) == {}  # an idle round before any window: nothing changes
        assert shadow.tokens == d.draft(context, 1, 0.8, g).tokens


def test_under_adaptive_k_a_window_rides_only_with_candidates(tiny):
    """LADE runs the window every step; adaptive K chose K > 0 to verify a draft, so with no
    candidates for the root its round is a plain one, no window in the pass (and update shifts it)."""
    prompt = [0, 1, 2, 3, 4, 5]
    for alone in (True, False):
        d = LookaheadDrafter(prompt, 256, 3, 3, 2, window_alone=alone)
        nothing = d.draft(prompt + [9], 4, 0.0, torch.Generator().manual_seed(0))  # no n-gram starts with 9
        assert not nothing.tokens and (nothing.extra is not None) == alone
        assert nothing.notes["columns_run"] == (3 if alone else 0)
        d.update(prompt + [9], [7], None)
        some = d.draft(prompt + [9, 7, 1], 4, 0.0, torch.Generator().manual_seed(0))  # (1, 2, 3) from the prompt
        assert some.tokens[:2] == [2, 3] and some.extra is not None
    ids = tiny.tokenizer.encode(PROMPT)
    for auto in (True, False):
        g = Generation(tiny, ids, Settings(drafter="lookahead", k=4, k_auto=auto, max_new_tokens=4))
        assert g.drafter.window_alone is not auto
    # Adaptive K weighs no K deeper than a candidate (N - 1) and prices a first draft at G nodes a level
    for k, k_max in ((12, 3), (2, 2)):
        a = Generation(tiny, ids, Settings(drafter="lookahead", k=k, k_auto=True, max_new_tokens=4)).adaptive
        assert a.k_max == k_max and a.per_level == 5.0 and len(a.choose(k).candidates()) == k_max + 1
    # An adaptive round that chose K > 0 and found no candidate: a plain pass, its window drawn as not run
    g = Generation(tiny, ids, Settings(drafter="lookahead", k=4, k_auto=True, max_new_tokens=12))
    g.adaptive.successes, g.adaptive.trials = 99.0, 100.0  # confident: every round drafts
    g.drafter.pool.grams.clear()
    r = g.step()
    assert r.k_choice.k > 0 and not r.draft_tokens and not r.extra_tokens and r.kv_after_verify == r.kv_before + 1
    colours = charts.window_figure(r, tiny.tokenizer.chars).data[0].marker.color
    assert set(colours[1:]) == {GREY}


@torch.no_grad()
def greedy(model, ctx: list[int], n: int) -> list[int]:
    out = list(ctx)
    for _ in range(n):
        logits, _ = model(torch.tensor([out]), torch.arange(len(out)))
        out.append(int(logits[0, -1].argmax()))
    return out[len(ctx) :]


@torch.no_grad()
def test_jacobi_steps_in_place_converge_to_the_greedy_continuation(tiny64):
    """N = 2 is plain Jacobi decoding: with the context held still, each pass fixes at least the
    first wrong guess, so W - 1 guesses are the greedy continuation after at most W - 1 passes."""
    model, ctx, W = tiny64.model, tiny64.tokenizer.encode(PROMPT), 8
    want = greedy(model, ctx, W - 1)
    d = LookaheadDrafter(ctx, model.config.block_size, window=W, ngram=2, candidates=1)
    cache = CachedModel(model)
    cache.sync(ctx)
    gen = torch.Generator().manual_seed(0)
    right = []
    for _ in range(W - 1):
        draft = d.draft(ctx, 0, 0.0, gen)
        right.append(next((i for i, (a, b) in enumerate(zip(d.levels[0][1:], want, strict=True)) if a != b), W - 1))
        d.observe(verify_pass(cache, ctx[-1], draft)[1])
        d.advance(0)  # a Jacobi step in place: the context does not move
    assert right[0] < W - 1 and right == sorted(right)
    assert d.levels[0][1:] == want


@torch.no_grad()
def test_every_window_row_is_the_target_on_its_own_chain_and_extras_leave_the_draft_alone(tiny64):
    """Float64: each extra row equals the reference GPT on exactly the chain the lookahead mask
    lets it see, and the root's and the candidates' rows are the same with and without the window,
    for the candidate tree and for a chain."""
    model, ctx = tiny64.model, tiny64.tokenizer.encode(PROMPT)
    d = LookaheadDrafter(ctx, model.config.block_size, window=4, ngram=4, candidates=4)
    cache = CachedModel(model)
    cache.sync(ctx)
    draft = d.draft(ctx, 4, 0.0, torch.Generator().manual_seed(1))
    assert len(draft.tokens) > 1 and not draft.is_chain and draft.extra is not None
    logits, extra_logits, positions, _ = verify_pass(cache, ctx[-1], draft)
    levels = [list(r) for r in d.levels]
    for (j, i), e in d.row.items():
        seen = [levels[0][c] for c in range(1, i + 1)] + [levels[level][i] for level in range(1, j + 1)]
        ref, _ = model(torch.tensor([ctx + seen]), torch.arange(len(ctx) + len(seen)))
        assert positions[1 + len(draft.tokens) + e] == len(ctx) - 1 + j + i
        assert (extra_logits[1 + e] - ref[0, -1]).abs().max() < 1e-10
    plain, none, _, _ = verify_pass(cache, ctx[-1], replace(draft, extra=None))
    assert none is None and (logits - plain).abs().max() < 1e-12 and (extra_logits[0] - plain[0]).abs().max() < 1e-12
    line = chain(draft.tokens[:2])  # the tree's first path
    line.extra = window_extra(d.levels, d.cols, 2)[0]
    with_window, _, _, _ = verify_pass(cache, ctx[-1], line)
    assert (with_window - verify_pass(cache, ctx[-1], chain(draft.tokens[:2]))[0]).abs().max() < 1e-12


def test_a_sampled_run_records_its_window_and_what_sampling_costs(tiny):
    prompt = tiny.tokenizer.encode(PROMPT)
    s = Settings(drafter="lookahead", k=4, temperature=0.8, max_new_tokens=60, seed=3)
    trace = Generation(tiny, prompt, s).run()
    json.dumps(trace.to_dict())  # notes are plain data
    assert all(r.kv_after_verify == r.kv_before + 1 + len(r.draft_tokens) + len(r.extra_tokens) for r in trace.rounds)
    assert any(r.extra_tokens for r in trace.rounds) and any(r.accepted_path for r in trace.rounds)
    r = next(r for r in trace.rounds if r.extra_tokens)
    assert len(r.extra_positions) == len(r.extra_tokens)
    assert all(r.kv_before < pos < tiny.config.block_size for pos in r.extra_positions)  # after the root, in the window
    ledger = from_kv(r)
    assert ledger.data[1].x[0] == r.kv_after_verify - r.kv_before and "extra" in ledger.data[1].name
    costs = [charts.sampling_cost(r) for r in trace.rounds]
    tried = [c for c in costs if c["greedy_guesses"]]
    assert tried and all(0 < c["mean_accept"] < 1 for c in tried)  # at T = 0 each would be accepted
    rows = charts.candidate_rows(trace.rounds[-1], tiny.tokenizer.chars)
    assert all(0 <= row["accepted"] <= 4 for row in rows)
    fig = charts.window_figure(trace.rounds[-1], tiny.tokenizer.chars)
    go.Figure(fig.to_dict())  # validates every property: raises on a misspelt one
    assert len(fig.data) == 2 and len(fig.data[0].x) == s.lookahead_window * (s.lookahead_ngram - 1)


@pytest.mark.parametrize(
    "knob, value",
    [("lookahead_window", 0), ("lookahead_window", 33), ("lookahead_ngram", 1), ("lookahead_candidates", 0)],
)
def test_bad_knobs_are_refused(knob, value):
    with pytest.raises(ValueError, match=r"lookahead \w+ must be between"):
        Settings(drafter="lookahead", **{knob: value}).check()
