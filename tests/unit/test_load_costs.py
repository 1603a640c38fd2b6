"""Adaptive K under load (specviz/adaptive/load.py): a batch's prices from the roofline, the lone sequence's
prices unchanged at B = 1, K falling to 0 where a batch's pass is bound by arithmetic, and the output still
plain decoding's at T = 0 (K is fixed before each draft, from the batch size and past rounds only)."""

import math
from itertools import pairwise

import pytest
from conftest import GREEDY_TEXT

from specviz.adaptive.costs import REFERENCE, CostCurve
from specviz.adaptive.load import (
    DECAY_LOADED,
    LOADED_FROM,
    Drafting,
    LoadCosts,
    LoadCurve,
    kept,
    kept_load,
    measure_drafting,
    physical,
)
from specviz.adaptive.policy import DECAY, SHADOW_BUDGET, SHADOW_EVERY, SHADOW_SCORE, AdaptiveK
from specviz.bench.batch import measure_load, run_batch_bench
from specviz.core.batch import Batch
from specviz.core.choice import MIN_GAIN
from specviz.core.engine import Generation
from specviz.core.settings import Settings


def ridge16(rows: int, seqs: int) -> float:
    """A pass bound by reading the weights up to 16 rows, by arithmetic past them."""
    return max(1.0, rows / 16)


def ridge4(rows: int, seqs: int) -> float:
    """A pass bound by arithmetic past 4 rows: a batch of 8 is already there."""
    return max(1.0, rows / 4)


def test_prices_alone_are_the_lone_curve_and_grow_with_the_batch():
    load = LoadCosts(REFERENCE, ridge16)
    assert load.at(1) == (REFERENCE, 1.0)
    v4, s4 = load.at(4)
    v64, s64 = load.at(64)
    assert v4.v(1) == v64.v(1) == 1.0
    assert v4.v(4) == pytest.approx(REFERENCE.v(4))  # 16 rows: still memory-bound
    assert v64.v(5) == pytest.approx(REFERENCE.v(5) * 5)  # 320 rows against 64: five times the arithmetic
    assert s4 == 4 and s64 == pytest.approx(64 / 4)  # drafting against a share of the pass: 1/B of it, then less
    assert load.at(64) is load.at(64) or load.at(64)[0] is v64  # kept per B: adaptive K's cache key


def requests(target, n, k_auto=True):
    return [(target.tokenizer.encode(GREEDY_TEXT[: 60 + 17 * i]),
             Settings(drafter="distilled", k=8, k_auto=k_auto, temperature=0, max_new_tokens=40, seed=i))
            for i in range(n)]  # fmt: skip


def test_k_falls_to_zero_under_load_and_the_output_stays_exact(target):
    reqs = requests(target, 8)
    plain = [Generation(target, p, Settings(drafter="none", temperature=0, max_new_tokens=40)).run().tokens
             for p, _ in reqs]  # fmt: skip
    ks = {}
    for name, load in (
        ("alone", None),
        ("ridge16", LoadCosts(REFERENCE, ridge16)),
        ("ridge4", LoadCosts(REFERENCE, ridge4)),
    ):
        traces = Batch([Generation(target, p, s) for p, s in reqs], load).run()
        assert [t.tokens for t in traces] == plain  # lossless at T = 0 whatever the prices
        ks[name] = [r.k_choice.k for t in traces for r in t.rounds]
    assert sum(ks["alone"]) / len(ks["alone"]) > 2  # alone, the distilled chain drafts deep
    # 8 sequences x 2 rows fill the 16 rows a pass reads the weights for: K = 1 rides free, deeper K costs
    mean = {name: sum(k) / len(k) for name, k in ks.items()}
    assert mean["ridge16"] < mean["alone"] / 2 and ks["ridge16"].count(1) > len(ks["ridge16"]) / 2
    assert ks["ridge4"].count(0) > len(ks["ridge4"]) * 0.9  # every extra row costs its weight: plain decoding
    one = Batch([Generation(target, *reqs[0])], LoadCosts(REFERENCE, ridge16)).run()[0]
    assert one.tokens == plain[0] and [r.k_choice.k for r in one.rounds] == [
        r.k_choice.k for r in Generation(target, *reqs[0]).run().rounds
    ]  # a batch of one chooses what the lone sequence chooses


def test_the_bench_runs_adaptive_rows_priced_for_the_load(target, tiny):
    rows = run_batch_bench(target, tiny, batches=(1, 2), drafters=("trigram",), max_new_tokens=6, repeats=1,
                           load=LoadCosts(REFERENCE, ridge16))  # fmt: skip
    auto = [r for r in rows if r["k_auto"]]
    assert [r["batch"] for r in auto] == [1, 2] and all(r["same_as_baseline"] for r in auto)
    assert all(r["costs"].startswith("reference machine") for r in auto)


def test_the_page_numbers():
    """specviz/teaching/load.py: adaptive K's choice falls with the batch; the closing paragraph says each
    drafter's speedups and where it stopped paying, from the rows it is given."""
    from specviz.teaching.load import chosen_k, closing

    ks = chosen_k("distilled", 0.8, REFERENCE, ridge16, (1, 2, 4, 8, 16, 64))
    assert [b for b, _ in ks] == [1, 2, 4, 8, 16, 64] and ks[0][1] >= 4 and ks[-1][1] == 0
    assert all(a >= b for (_, a), (_, b) in zip(ks, ks[1:], strict=False))
    row = {"suite": "batch", "k_auto": False, "cpu": "a CPU", "date": "a date", "load_average": 8.0,
           "speedup_min": 0.0, "speedup_max": 9.0, "tokens_per_forward": 2.0}  # fmt: skip
    rows = [dict(row, drafter=d, batch=b, speedup=s, tokens_per_s=t) for d, b, s, t in
            [("none", 1, 1.0, 200), ("none", 8, 1.0, 900), ("trigram", 1, 1.5, 300), ("trigram", 8, 0.5, 450)]]  # fmt: skip
    text = closing(rows)
    assert (
        "from 200 to 900 tokens/s" in text
        and "trigram: 1.50× at B = 1, 0.50× at B = 8, stopped paying at about B = 3" in text
    )
    assert "load average 8.0: a busy shared machine: noisy" in text  # the run's conditions, as they were
    assert "load average 1.0: a quiet machine" in closing([dict(r, load_average=1.0) for r in rows])


# A synthetic batch: a sequence's plain round in a batch of B costs share[B] of a lone one, and N rows a
# sequence cost ratio[B][N] of one row (one extra row 1.2x at B = 2, 1.5x at B = 8).
SYNTHETIC = LoadCurve(
    share={1: 1.0, 2: 0.6, 8: 0.25},
    ratio={1: {1: 1.0, 2: 1.1, 5: 1.3}, 2: {1: 1.0, 2: 1.2, 5: 1.8}, 8: {1: 1.0, 2: 1.5, 5: 3.0}},
    source="synthetic",
)


def test_a_measured_curve_prices_the_batched_round_itself():
    load = LoadCosts(REFERENCE, SYNTHETIC, {"trigram": Drafting(per_token=0.05, per_call=0.1)})
    assert load.at(1) == (REFERENCE, 1.0)  # alone: unchanged
    assert load.price(1, "trigram") == (REFERENCE, 1.0, None, DECAY)
    v8, s8 = load.at(8)
    assert s8 == pytest.approx(4.0)  # a sequence's round is a quarter of a lone one: its drafting weighs 4x
    assert [v8.v(n) for n in (1, 2, 5)] == pytest.approx([1.0, 1.5, 3.0])  # the measured ratios, not the lone curve
    assert v8.v(3) == pytest.approx(2.0) and v8.v(7) == pytest.approx(4.0)  # a line between, and past, the points
    v4, s4 = load.at(4)  # between measured B: a line in log2 B of a sequence's round
    assert 1 / s4 == pytest.approx((0.6 + 0.25) / 2) and v4.v(2) == pytest.approx((0.6 * 1.2 + 0.25 * 1.5) / 0.85)
    c8, s, drafting, decay = load.price(8, "trigram")  # measured drafting: its per-call cost on every drafting round
    assert (
        drafting == Drafting(per_token=0.05, per_call=0.1)
        and s == s8
        and c8.v(1) == 1.0
        and c8.v(2) == pytest.approx(1.5 + 0.1 * 4)
        and decay == DECAY_LOADED > DECAY  # a big batch's longer memory
    )
    assert load.price(8, "distilled") == (v8, s8, None, DECAY_LOADED)  # no measurement: the declared costs
    assert load.price(LOADED_FROM - 1, "trigram").decay == DECAY  # a smaller batch: the lone memory
    said = load.describe("trigram")
    assert "synthetic" in said and "0.050 a token, 0.100 a round" in said and "about 100 rounds" in said


def expected_rate(alpha: float, k: int, v: CostCurve, cost: float) -> float:
    """E(K) / cost(K) for a chain: (1 + a + ... + a^K) / (v(K + 1) + K c), by hand."""
    return sum(alpha**i for i in range(k + 1)) / (v.v(k + 1) + k * cost)


@pytest.mark.parametrize("per_call", [0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.6])
@pytest.mark.parametrize("B", [2, 8])
def test_k_falls_to_zero_exactly_when_the_gain_is_below_the_price(per_call, B):
    """Adaptive K priced for a batch (the measured round, drafting per token and per call) drafts exactly when
    some K promises MIN_GAIN times plain decoding's tokens per unit of time at those prices."""
    alpha, per_token = 0.6, 0.02
    load = LoadCosts(REFERENCE, SYNTHETIC, {"trigram": Drafting(per_token, per_call)})
    policy = AdaptiveK(5, draft_cost=0.02)
    policy.successes, policy.trials = alpha * 100 - 1, 98.0  # Beta(1, 1) prior: alpha = 0.6
    assert policy.alpha == pytest.approx(alpha)
    policy.price_for(*load.price(B, "trigram"))
    curve, scale, drafting = policy.curve, policy.scale, policy.drafting
    c = drafting.per_token
    best = max(range(6), key=lambda k: expected_rate(alpha, k, curve, c * scale) if k else 1.0)
    gain = expected_rate(alpha, best, curve, c * scale) if best else 1.0
    k = policy.choose(5).k
    assert (k == 0) == (gain < MIN_GAIN)
    if k:
        assert k == best


def test_a_big_batch_remembers_more_of_a_sequence_s_past():
    """From LOADED_FROM on, every round's successes and trials decay by DECAY_LOADED, not DECAY: after a long
    run accepting 0.6 and then ten rejected rounds, each estimate is its decay's closed form, the lone one far
    below 0.5 and a big batch's still above it. The new memory weighs the rounds after it only: what was
    learnt, and the choice made from it, stand."""
    c = 0.02
    load = LoadCosts(REFERENCE, SYNTHETIC, {"trigram": Drafting(per_token=c, per_call=0.05)})
    lone, loaded = AdaptiveK(6, draft_cost=c), AdaptiveK(6, draft_cost=c)
    loaded.price_for(*load.price(LOADED_FROM, "trigram"))
    assert loaded.decay == DECAY_LOADED and lone.decay == DECAY
    for policy, d in ((lone, DECAY), (loaded, DECAY_LOADED)):
        policy.trials = 1 / (1 - d)  # a long run's trials: 1 + d + d^2 + ...
        policy.successes = 0.6 * policy.trials
    before = loaded.choose(6)
    loaded.price_for(*load.price(LOADED_FROM, "trigram"))  # priced as the round before: nothing to re-choose
    assert loaded.choose(6) is before
    for _ in range(10):
        for policy in (lone, loaded):
            policy.update(1, 1, 1, 0)  # K = 1, its one token rejected: one trial, no success
    for policy, d in ((lone, DECAY), (loaded, DECAY_LOADED)):
        trials = d**10 / (1 - d) + (1 - d**10) / (1 - d)  # the old trials decayed, and ten new ones
        assert policy.alpha == pytest.approx((d**10 * 0.6 / (1 - d) + 1) / (trials + 2))  # Beta(1, 1) prior
    assert lone.alpha < 0.3 and loaded.alpha > 0.5


def test_the_price_moves_the_choice_to_k_zero_in_a_batch(target):
    """Between synthetic prices: at B = 2 the trigram drafts, at B = 8 the same acceptance does not
    pay its drafting round's price, and the output is plain decoding's either way."""
    reqs = [(p, Settings(drafter="trigram", k=6, k_auto=True, temperature=0, max_new_tokens=30, seed=i))
            for i, (p, _) in enumerate(requests(target, 8))]  # fmt: skip
    plain = [Generation(target, p, Settings(drafter="none", temperature=0, max_new_tokens=30)).run().tokens
             for p, _ in reqs]  # fmt: skip
    # B = 2's extra rows cheaper than SYNTHETIC's: a K = 1 draft there promises over MIN_GAIN at the trigram's
    # alpha here (about 0.5), and at B = 8 under 1x
    cheap = LoadCurve(SYNTHETIC.share, {**SYNTHETIC.ratio, 2: {1: 1.0, 2: 1.05, 5: 1.2}}, "synthetic")
    load = LoadCosts(REFERENCE, cheap, {"trigram": Drafting(per_token=0.02, per_call=0.05)})
    ks = {}
    for B in (2, 8):
        traces = Batch([Generation(target, p, s) for p, s in reqs[:B]], load).run()
        assert [t.tokens for t in traces] == plain[:B]
        ks[B] = [r.k_choice.k for t in traces for r in t.rounds]
    assert sum(k > 0 for k in ks[2]) > len(ks[2]) / 2 and ks[8].count(0) > len(ks[8]) * 0.9


def test_measure_drafting_fits_per_token_and_per_call():
    """The line through the measured ratios, on a clock that each call moves by a known amount."""
    clock = {"t": 0.0}
    plain = lambda: clock.__setitem__("t", clock["t"] + 2.0)  # noqa: E731  a lone plain round: 2 s
    draft = lambda k: clock.__setitem__("t", clock["t"] + 0.3 + 0.1 * k)  # noqa: E731  0.15 + 0.05 k rounds
    d = measure_drafting(draft, plain, ks=(1, 2, 4), repeats=3, now=lambda: clock["t"])
    assert d.per_token == pytest.approx(0.05) and d.per_call == pytest.approx(0.15)
    assert d.next_token is None and d.next_call is None and d.in_batch(8) is d


def test_measure_drafting_fits_a_draft_after_another_sequence_s():
    """With other sequences' drafts, what each adds in a row is fitted on its own: here the first draft costs
    0.15 + 0.05 k lone rounds and each of three more 0.05 + 0.02 k."""
    clock = {"t": 0.0}
    tick = lambda s: clock.__setitem__("t", clock["t"] + s)  # noqa: E731
    plain = lambda: tick(2.0)  # noqa: E731
    first = lambda k: tick(0.3 + 0.1 * k)  # noqa: E731
    other = lambda k: tick(0.1 + 0.04 * k)  # noqa: E731
    d = measure_drafting(first, plain, ks=(1, 2, 4), repeats=3, now=lambda: clock["t"], others=[other] * 3)
    assert d.per_token == pytest.approx(0.05) and d.per_call == pytest.approx(0.15)
    assert d.next_token == pytest.approx(0.02) and d.next_call == pytest.approx(0.05)


def test_a_batch_prices_a_sequence_s_drafting_as_one_of_a_row():
    """In a batch of B, one draft in B is the first after the pass and the rest follow another's: a sequence is
    priced at that mix (one object per batch size, so adaptive K is not re-priced every round), alone at its
    lone figures, and a drafting measured alone is priced as it is."""
    row = Drafting(per_token=0.05, per_call=0.1, next_token=0.02, next_call=0.04)
    assert row.in_batch(1) is row
    assert row.in_batch(4) == Drafting(per_token=0.25 * 0.05 + 0.75 * 0.02, per_call=0.25 * 0.1 + 0.75 * 0.04)
    load = LoadCosts(REFERENCE, SYNTHETIC, {"trigram": row})
    assert load.price(1, "trigram").drafting is None
    assert load.price(4, "trigram").drafting == row.in_batch(4)
    assert load.price(4, "trigram").drafting is load.price(4, "trigram").drafting
    cheaper = load.at(8, row.in_batch(8))[0].v(2)
    assert cheaper < load.at(8, row)[0].v(2) and load.price(8, "trigram").curve.v(2) == cheaper
    alone = Drafting(per_token=0.05, per_call=0.1)
    assert LoadCosts(REFERENCE, SYNTHETIC, {"trigram": alone}).price(8, "trigram").drafting is alone


def test_a_measured_load_curve_is_kept_and_read_back(target, tmp_path):
    calls = []

    def measure_now():
        calls.append(1)
        return measure_load(target, batches=(1, 2), rows=(1, 2), repeats=1)

    assert kept(target, tmp_path) is None  # nothing measured: the page falls back to the roofline
    curve = kept_load(target, measure_now, tmp_path)
    assert (
        kept(target, tmp_path).ratio == curve.ratio
        and curve.share[1] == 1.0
        and all(r[1] == 1.0 for r in curve.ratio.values())
    )
    assert set(curve.ratio) == {1, 2} and all(v > 0 for r in curve.ratio.values() for v in r.values())
    again = kept_load(target, measure_now, tmp_path)
    assert calls == [1] and again.ratio == curve.ratio and "kept from then" in again.source
    (path,) = tmp_path.glob("*.json")  # beside it, the lock its maker held
    path.write_text(path.read_text().replace('"share"', '"shares"'))  # damaged: measured again
    kept_load(target, measure_now, tmp_path)
    assert calls == [1, 1]


def test_shadows_stay_within_their_budget_of_a_batched_round():
    """An idle cheap drafter's shadow drafts cost SHADOW_BUDGET of its round at most: in a batch, where its
    round is ``scale`` times smaller, it shadows that many times more rarely (and alone as before)."""
    policy = AdaptiveK(6, draft_cost=0.02)
    alone = policy.shadow_every
    assert alone == max(SHADOW_EVERY, math.ceil((SHADOW_SCORE + 0.02) / SHADOW_BUDGET - 1e-9))
    curve, scale = LoadCosts(REFERENCE, SYNTHETIC).at(8)
    policy.price_for(curve, scale)
    assert policy.shadow_every == math.ceil((SHADOW_SCORE + 0.02) * 4 / SHADOW_BUDGET - 1e-9) == 20
    policy.price_for(curve, scale, Drafting(per_token=0.03, per_call=0.05))  # measured dearer: spaced at that
    assert policy.shadow_every == math.ceil((SHADOW_SCORE + 0.05 + 0.03) * 4 / SHADOW_BUDGET - 1e-9) == 44
    policy.price_for(curve, scale, Drafting(per_token=0.03, per_call=0.1))  # only its per-call cost moved
    assert policy.shadow_every == math.ceil((SHADOW_SCORE + 0.1 + 0.03) * 4 / SHADOW_BUDGET - 1e-9) == 64
    policy.price_for(REFERENCE, 1.0)
    assert policy.shadow_every == alone
    due = [policy.idle_round() for _ in range(3 * alone)]
    assert due.count(True) == 3  # every ``alone``-th idle round


# Measured here on a shared machine (thread CPU time, 1 thread): B = 4's second row looks cheaper than B = 2's,
# and B = 64's plain round dearer than B = 32's. Kept as measured, the noise that physical() removes.
NOISY = LoadCurve(
    share={1: 1.0, 2: 0.609, 4: 0.399, 8: 0.288, 16: 0.240, 32: 0.184, 64: 0.215},
    ratio={1: {1: 1.0, 2: 1.16, 3: 1.13, 5: 1.16, 9: 1.40}, 2: {1: 1.0, 2: 1.32, 3: 1.25, 5: 1.57, 9: 2.35},
           4: {1: 1.0, 2: 1.11, 3: 1.42, 5: 1.78, 9: 2.74}, 8: {1: 1.0, 2: 1.40, 3: 1.54, 5: 2.25, 9: 3.10},
           16: {1: 1.0, 2: 1.34, 3: 1.64, 5: 2.31, 9: 3.34}, 32: {1: 1.0, 2: 1.38, 3: 1.62, 5: 2.14, 9: 3.61},
           64: {1: 1.0, 2: 1.38, 3: 1.76, 5: 2.43, 9: 3.94}},
    source="noisy",
)  # fmt: skip


def test_prices_hold_to_what_a_batched_round_must_do():
    fit = physical(NOISY)
    bs = sorted(fit.share)
    assert all(fit.share[a] >= fit.share[b] for a, b in pairwise(bs))  # a bigger batch: no dearer a sequence
    assert fit.share[64] < NOISY.share[64] and fit.share[4] == NOISY.share[4]  # the dip pooled, the rest kept
    ns = sorted(fit.ratio[1])

    def steps(b):
        return [(fit.ratio[b][n2] - fit.ratio[b][n1]) / (n2 - n1) for n1, n2 in pairwise(ns)]

    for b in bs:
        assert fit.ratio[b][1] == 1.0 and min(steps(b)) >= 0  # one more row never costs less than nothing
    for a, b in pairwise(bs):
        assert all(x <= y + 1e-12 for x, y in zip(steps(a), steps(b), strict=True))  # ... nor less in a bigger batch
    # least squares: the measured points that already obey are kept, and the fit is no further from the
    # measurement than the measurement's own violations
    assert fit.ratio[8] == pytest.approx(NOISY.ratio[8], abs=0.1) and fit.ratio[1][2] == pytest.approx(1.16)
    for curve in (SYNTHETIC, fit):  # a curve that obeys already is its own fit
        assert all(physical(curve).ratio[b] == pytest.approx(curve.ratio[b]) for b in curve.ratio)
    assert LoadCosts(REFERENCE, NOISY).measured.ratio == fit.ratio  # what adaptive K prices with
