"""Adaptive K, one idea in one file over 300 lines (its tests share the cost model's fixtures).

The model's arithmetic, its choices at the extremes, probing, and that the engine
with K auto stays exact (greedy equals the baseline for every drafter)."""

import math

import pytest
import torch
from conftest import GREEDY_TEXT, GREEDY_TOKENS
from hypothesis import given
from hypothesis import strategies as st

from specviz.adaptive.costs import REFERENCE, CostCurve, interpolate
from specviz.adaptive.policy import SHADOW_BUDGET, SHADOW_SCORE, AdaptiveK
from specviz.adaptive.rates import MIN_GAIN, best_k, rates, round_cost, round_costs
from specviz.adaptive.stopper import Stopper
from specviz.core.choice import Choice, expected_tokens
from specviz.core.engine import IDLE_FOR_GOOD, Generation
from specviz.core.settings import Settings
from specviz.drafters import drafter_names
from specviz.drafters.base import Draft
from specviz.teaching.exactness import chi_square
from specviz.verifiers import TokenWise, expected_acceptance

DRAFTERS = drafter_names()

verify = TokenWise().verify


def test_expected_tokens_is_the_geometric_sum():
    assert expected_tokens(0.5, 0) == 1.0
    assert expected_tokens(0.5, 3) == pytest.approx(1 + 0.5 + 0.25 + 0.125)
    assert expected_tokens(1.0, 4) == 5.0
    assert REFERENCE.v(1) == 1.0 and REFERENCE.v(5) > REFERENCE.v(2) > 1.0


def learnt(alpha: float, k_max: int = 12, c: float = 0.02) -> AdaptiveK:
    """A policy whose estimate has settled at per-level acceptance ``alpha`` (chains)."""
    a = AdaptiveK(k_max, c)
    a.successes, a.trials, a.tokens, a.levels = 10 * alpha, 10.0, 10.0, 10.0  # decay 0.9: ~10 trials in view
    return a


def test_update_counts_levels_until_the_first_rejection():
    a = AdaptiveK(8, 0.02)
    a.update(4, 4, 4, 2)  # two levels accepted, the third rejected: 3 trials
    a.update(4, 4, 4, 4)  # all four accepted: 4 trials, no failure
    assert a.successes == pytest.approx(0.9 * 2 + 4) and a.trials == pytest.approx(0.9 * 3 + 4)
    assert a.alpha == pytest.approx((5.8 + 1) / (6.7 + 2))
    a.update(0, 0, 0, 0)  # a K = 0 round's verification teaches nothing (observe does)
    assert a.trials == pytest.approx(6.7)


def test_confident_drafts_go_deep_and_weak_ones_not_at_all():
    deep = learnt(0.95).choose(12)
    full = rates(deep.alpha, deep.per_level, deep.draft_cost, 12)  # every K
    assert deep.k >= 7 and full[deep.k] == max(full)
    none = learnt(0.1).choose(12)
    assert none.k == 0 and max(rates(none.alpha, 1.0, 0.02, 12)) < MIN_GAIN
    assert learnt(0.95).choose(3).k == 3  # never above the engine's limit
    cands = deep.candidates()
    assert cands[0] == {"k": 0, "expected_tokens": 1.0, "cost": 1.0, "tokens_per_cost": 1.0}
    assert cands[5]["tokens_per_cost"] == pytest.approx(cands[5]["expected_tokens"] / round_cost(5, 1.0, 0.02))


def test_every_k_is_weighed_past_the_step_in_v():
    """v(N) steps up at 9 rows, so tokens per cost can dip at K = 8 and rise again: the choice is the
    best K overall, not the first peak."""
    v = REFERENCE.v
    assert v(9) - v(8) > 0.1 > v(8) - v(7)
    a = AdaptiveK(12, 0.02)
    a.successes, a.trials = 0.9 * 1000 - 1, 1000 - 2  # alpha = 0.9 with the Beta(1, 1) prior
    r = rates(a.alpha, 1.0, 0.02, 12)
    assert r[8] < r[7] < r[12]  # the dip, and a better K beyond it
    assert a.choose(12).k == 12


def test_tokens_a_round_adds_to_the_pass_are_priced_in_v():
    """Lookahead's window rides in every drafting round's pass: one candidate costs v(2 + e), not v(2)."""
    from specviz.drafters.lookahead import LookaheadDrafter

    e = LookaheadDrafter([1, 2, 3], 256, window=5, ngram=4).verify_extra
    assert e == 3 * 5 - 1  # the window's cells but the root
    assert round_cost(1, 1.0, 0.02, e) == pytest.approx(0.02 + REFERENCE.v(2 + e, tree=True))  # a mask is built
    assert round_cost(0, 1.0, 0.02, e) == 1.0  # an idle round sends no window
    plain, windowed = learnt(0.5), learnt(0.5)
    windowed.extra = e
    assert plain.choose(12).k > 0 and windowed.choose(12).k == 0  # what pays for a chain does not pay for the window
    deep, windowed_deep = learnt(0.9), learnt(0.9)
    windowed_deep.extra = e
    assert windowed_deep.choose(12).k >= deep.choose(12).k  # a fixed cost per round is spread over deeper drafts
    wide = AdaptiveK(12, 0.02, extra=223)  # W = 32, N = 8: no acceptance could pay for that pass
    assert wide.never_drafts() and not AdaptiveK(12, 0.02, extra=e).never_drafts()


def test_a_drafter_of_known_width_is_priced_at_it_until_it_has_drafted():
    """Lookahead sends up to G nodes a level plus its window: priced as a chain, its first draft was
    a ~30-row pass for ~1.3 tokens. At its width, the same acceptance does not pay; once it has
    drafted, what it sent is the estimate."""
    wide, chain = AdaptiveK(3, 0.02, extra=14, nodes_per_level=5.0), AdaptiveK(3, 0.02, extra=14)
    for a in (wide, chain):
        a.successes, a.trials = 7.0, 10.0  # alpha = 8/12
    assert (wide.per_level, chain.per_level) == (5.0, 1.0)
    assert chain.choose(3).k > 0 and wide.choose(3).k == 0
    wide.update(3, 6, 3, 1)
    assert wide.per_level == 2.0  # 6 tokens over 3 levels


# Measured curves need not rise smoothly (an AMD EPYC's dips at N = 4 and 8): any v >= 1 at a few N.
curves = st.dictionaries(st.integers(2, 120), st.floats(1, 8), min_size=1, max_size=12).map(
    lambda points: CostCurve(interpolate({1: 1.0} | points), "generated")
)


@given(st.floats(0, 1), st.floats(1, 6), st.floats(0, 0.6), st.integers(0, 16), st.sampled_from([0, 3, 14]),
       st.one_of(st.just(REFERENCE), curves))  # fmt: skip
def test_best_k_is_the_best_rate_or_plain_decoding(alpha, per_level, c, k_max, extra, curve):
    """best_k stops early (no deeper K can beat the best so far); it must still be rates()'s argmax,
    on any cost curve, the ones whose cost dips at a deeper K too."""
    r = rates(alpha, per_level, c, k_max, extra, curve)
    best = max(range(len(r)), key=r.__getitem__)  # ties: the smaller K
    assert best_k(alpha, per_level, c, k_max, extra, curve) == (best if r[best] >= MIN_GAIN else 0)


def test_a_dip_in_the_curve_past_a_worse_k_is_still_found():
    """The early stop must bound deeper K by the least cost ahead, not the cost at hand: here K = 2
    costs more than K = 3 and would stop a search that assumed costs only grow."""
    dip = CostCurve(interpolate({1: 1.0, 2: 1.4, 3: 3.0, 4: 1.5, 5: 4.0, 256: 9.0}), "dip")
    assert best_k(0.7, 1.0, 0.0, 4, curve=dip) == 3
    assert best_k(0.7, 1.0, 0.0, 4) == 4  # the reference curve rises smoothly: the deepest pays


def test_the_cost_curve_decides_whether_drafting_pays():
    """The same acceptance drafts on a machine whose passes of a few rows are cheap (the reference) and
    not on one where they are dear, and the round's record holds the costs it was weighed with."""
    dear = CostCurve(interpolate({1: 1.0, 2: 1.6, 9: 2.4, 128: 9.0}), "dear")
    cheap, costly = learnt(0.45), learnt(0.45)
    costly.curve = dear
    assert cheap.choose(12).k > 0 and costly.choose(12).k == 0
    choice = costly.choose(12)
    assert choice.costs[1] == pytest.approx(0.02 + 1.6) and len(choice.costs) == 13
    assert [c["cost"] for c in choice.candidates()] == list(choice.costs)


def test_an_expensive_drafter_needs_more_acceptance():
    cheap, dear = learnt(0.6, c=0.02).choose(12), learnt(0.6, c=0.6).choose(12)
    assert cheap.k > dear.k


def test_idle_rounds_still_learn_from_unverified_drafts():
    a = learnt(0.1)
    assert a.choose(12).k == 0 and a.idle_round()
    assert not a.idle_round()  # idle rounds are scored one in SHADOW_EVERY
    a.update(3, 3, 3, 0)  # a round that drafts ends the idle streak: the next idle round scores again
    assert a.idle_round() and not a.idle_round()
    assert not AdaptiveK(12, 0.45).idle_round()  # an expensive drafter is never consulted while idle
    costly_call = AdaptiveK(12, 0.04, call_cost=0.4)  # a drafter whose every call costs (an index rebuilt, say)
    due = [costly_call.idle_round() for _ in range(94)]
    # within SHADOW_BUDGET per idle round, scoring included: (0.03 + 0.4 + 0.04) / 0.01 = 47
    assert costly_call.shadow_every == math.ceil((SHADOW_SCORE + 0.4 + 0.04) / SHADOW_BUDGET) == 47
    assert [i for i, d in enumerate(due) if d] == [0, 47]
    for _ in range(40):  # the text turns predictable: each idle round's one-level draft would be accepted
        a.observe(0.95)
    assert a.alpha > 0.85 and a.choose(12).k >= 4


def test_a_cached_choice_is_the_one_made_afresh_as_the_limit_falls():
    for alpha in (0.05, 0.3, 0.6, 0.95):
        for c in (0.02, 0.1, 0.45):
            cached, fresh = learnt(alpha, c=c), learnt(alpha, c=c)
            for limit in (12, 12, 9, 5, 5, 2, 1, 0, 12, 3):  # room before a window jump, then a new window
                fresh._last = None
                assert cached.choose(limit) == fresh.choose(limit), (alpha, c, limit)


def test_a_drafter_too_costly_to_shadow_that_chose_k_0_never_drafts():
    assert AdaptiveK(12, 0.45).never_drafts()  # K = 0 at the prior, and no shadow will ever say otherwise
    # A tree's cost per node, where the prior (alpha 0.5, one node a level) would draft: no evidence, no start.
    assert max(rates(0.5, 1.0, 0.2, 12)) > MIN_GAIN and AdaptiveK(12, 0.2).never_drafts()
    assert AdaptiveK(12, 0.2).choose(12).k == 0
    assert not AdaptiveK(12, 0.02).never_drafts()  # a cheap one: its shadow drafts keep it learning
    assert not learnt(0.95, c=0.45).never_drafts()  # a costly one whose drafts pay


@pytest.mark.parametrize(
    "drafter, knobs",
    [("eagle3", {}), ("lookahead", {"lookahead_window": 32, "lookahead_ngram": 8})],  # a window too costly to run
)
def test_a_drafter_that_never_drafts_is_left_alone(target64, drafter, knobs):
    """No features captured, no update, a note that says so; the output is plain greedy decoding's."""
    prompt = target64.tokenizer.encode("ROMEO:\nBut soft, what light through yonder window breaks?\n")
    base = Generation(target64, prompt, Settings(drafter="none", temperature=0, max_new_tokens=40)).run()
    gen = Generation(target64, prompt, Settings(drafter=drafter, k=8, k_auto=True, temperature=0, max_new_tokens=40,
                                                **knobs))  # fmt: skip
    assert gen.never_drafts and gen.target.feature_layers == ()
    assert gen.run().tokens == base.tokens
    assert all(r.k_choice.k == 0 and r.draft_notes == {"adaptive K": IDLE_FOR_GOOD} and r.drafter_update == {}
               for r in gen.trace.rounds)  # fmt: skip


def sampled_siblings(q: torch.Tensor, n: int, sampling: str, g: torch.Generator) -> Draft:
    """n children of the root drawn from q, with or without replacement; q rows as drawn."""
    tokens, rows, left = [], [], q
    for _ in range(n):
        rows.append(left)
        tokens.append(int(torch.multinomial(left, 1, generator=g)))
        if sampling == "without-replacement":
            left = left.clone()
            left[tokens[-1]] = 0
            left = left / left.sum()
    return Draft(tokens, [-1] * n, torch.stack(rows), sampling=sampling)


@pytest.mark.slow  # 20,000 verifications per case (~5 s for the sampled trees)
@pytest.mark.parametrize("kind", ["deterministic tree", "sampled chain", "with-replacement", "without-replacement"])
def test_expected_acceptance_is_how_often_verify_accepts_a_first_level(kind):
    """The closed form that scores idle rounds, against verify itself over many seeds."""
    g = torch.Generator().manual_seed(0)
    p = torch.softmax(torch.randn(8, generator=g, dtype=torch.float64), 0)
    p_rows = torch.stack([p] * 4)  # rows past the first are only read after an acceptance
    q = torch.softmax(torch.randn(8, generator=g, dtype=torch.float64), 0)
    if kind == "deterministic tree":
        draft = Draft([3, 5, 0], [-1, -1, -1])  # three distinct children of the root
        want = float(p[[3, 5, 0]].sum())
        assert expected_acceptance(draft, p) == pytest.approx(want)
    elif kind == "sampled chain":
        want = float(torch.minimum(p, q).sum())
        assert expected_acceptance(sampled_siblings(q, 1, kind, g), p) == pytest.approx(want)
    else:  # the score of one draw is unbiased: average it over as many draws as the runs below
        want = sum(expected_acceptance(sampled_siblings(q, 3, kind, g), p) for _ in range(20000)) / 20000
    n, hits = 20000, 0
    for seed in range(n):
        if kind != "deterministic tree":  # fresh draws from q each time
            draft = sampled_siblings(q, 1 if kind == "sampled chain" else 3, kind, g)
        hits += bool(verify(draft, p_rows, 1.0, torch.Generator().manual_seed(seed)).path)
    assert abs(hits / n - want) < 4 * (2 * want * (1 - want) / n) ** 0.5  # within 4 standard errors


@pytest.mark.parametrize("drafter", [d for d in DRAFTERS if d != "none"])
def test_greedy_with_k_auto_equals_the_baseline(target64, tiny64, greedy, drafter):
    prompt = target64.tokenizer.encode(GREEDY_TEXT)
    run = Generation(target64, prompt, Settings(drafter=drafter, k=8, k_auto=True, temperature=0,
                                                max_new_tokens=GREEDY_TOKENS), tiny64.model).run()  # fmt: skip
    assert run.tokens == greedy.tokens and sum(r.reprefill for r in run.rounds) >= 1
    assert all(r.k_choice is not None and len(r.draft_tokens) <= r.k_choice.k * 64 for r in run.rounds)


@pytest.mark.slow  # 3,000 generations per drafter (~4 s each)
@pytest.mark.parametrize("drafter", ["bigram", "trie"])  # a sampled chain, a deterministic tree
def test_an_idle_round_with_a_shadow_draft_emits_exactly_p(target, drafter):
    """K = 0 rounds that score an unverified draft first (it consumes random draws) still emit a
    token drawn from the target's p."""
    prompt = target.tokenizer.encode("the cat sat on the mat.\nthe cat sat on the")
    counts = torch.zeros(target.config.vocab_size, dtype=torch.long)
    shadows, n = 0, 3000
    first = Generation(target, prompt, Settings(drafter=drafter, k=4, k_auto=True, temperature=1.0))
    first.target.sync(prompt)  # the prompt's prefill, shared by every run below
    for seed in range(n):
        gen = Generation(target, prompt, Settings(drafter=drafter, k=4, k_auto=True, temperature=1.0, seed=seed))
        gen.target.copy_from(first.target)
        gen.adaptive.successes, gen.adaptive.trials = 0.0, 10.0  # acceptance looks hopeless: K = 0
        scored = []
        gen.adaptive.observe = scored.append
        r = gen.step()
        assert r.k_choice.k == 0 and not r.draft_tokens
        shadows += len(scored)
        counts[r.emitted[0]] += 1
    assert shadows == n  # every round scored a shadow draft
    with torch.no_grad():
        logits, _ = target.model(torch.tensor([prompt]), torch.arange(len(prompt)))
    test = chi_square(counts, torch.softmax(logits[0, -1].double(), -1))
    assert test.dof >= 3 and test.p_value >= 0.001, test


def test_a_budgeted_tree_is_priced_at_no_more_than_its_budget():
    """Per level is learnt at the depth drafted (16 nodes over 3 levels: 5.3); a deeper K spreads the
    same 16 nodes thinner, so it is priced at 16 nodes, not K x 5.3."""
    assert round_cost(12, 16 / 3, 0.02, max_nodes=16) == pytest.approx(16 * 0.02 + REFERENCE.v(17, tree=True))
    assert round_cost(12, 16 / 3, 0.02) == pytest.approx(12 * 16 / 3 * 0.02 + REFERENCE.v(65, tree=True))
    assert round_cost(2, 16 / 3, 0.02, max_nodes=16) == round_cost(2, 16 / 3, 0.02)  # under the budget: as before
    capped, uncapped = AdaptiveK(12, 0.02, max_nodes=16), AdaptiveK(12, 0.02)
    for a in (capped, uncapped):
        a.successes, a.trials, a.tokens, a.levels = 8.6, 10.0, 16.0, 3.0  # alpha 0.8, 5.3 nodes a level
    assert capped.choose(12).k > uncapped.choose(12).k


@pytest.mark.parametrize("drafter, knob", [("distilled-tree", "distilled_nodes"), ("suffix", "suffix_max_nodes"),
                                           ("trie", "trie_num_draft")])  # fmt: skip
def test_the_engine_prices_a_tree_drafter_at_its_budget(target, drafter, knob):
    gen = Generation(target, [1, 2, 3], Settings(drafter=drafter, k=12, k_auto=True, **{knob: 9}))
    assert gen.adaptive.max_nodes == 9
    assert Generation(target, [1, 2, 3], Settings(drafter="trigram", k=12, k_auto=True)).adaptive.max_nodes == 0


def test_a_cost_per_level_is_charged_once_a_level_whatever_its_width():
    """Medusa runs one head a level: K levels of 3 nodes cost K x level_cost + 3K x c, and a drafter
    that says so drafts less deep than one that costs nothing a level; the engine passes it on."""
    assert round_cost(2, 3.0, 0.005, level_cost=0.1) == pytest.approx(2 * 0.1 + 6 * 0.005 + REFERENCE.v(7, tree=True))
    assert round_cost(0, 3.0, 0.005, level_cost=0.1) == 1.0  # an idle round runs no head
    free, per_level = AdaptiveK(12, 0.005), AdaptiveK(12, 0.005, level_cost=0.1)
    for a in (free, per_level):
        a.successes, a.trials = 7.0, 10.0  # alpha 0.67
    assert 0 < per_level.choose(12).k < free.choose(12).k
    assert max(rates(1.0, 1.0, 0.0, 12, level_cost=0.5)) < max(rates(1.0, 1.0, 0.0, 12))


def test_the_engine_prices_medusa_per_level(target):
    gen = Generation(target, [1, 2, 3], Settings(drafter="medusa", k=12, k_auto=True))
    assert gen.adaptive.level_cost == gen.drafter.level_cost > 0


def test_the_choice_chart_says_what_a_level_costs_when_it_costs():
    from specviz.charts.adaptive import k_choice_bars

    for level_cost in (0.0, 0.1):
        a = AdaptiveK(4, 0.005, level_cost=level_cost)
        a.successes, a.trials = 7.0, 10.0
        choice = a.choose(4)
        assert choice.level_cost == level_cost
        title = k_choice_bars(choice).layout.title.text
        assert ("0.10 passes a level" in title) == bool(level_cost), title


def stop(alpha: float, c: float, k_max: int, estimates, curve: CostCurve = REFERENCE) -> Choice:
    """Run a Stopper over these per-token estimates (alpha past them) until it says no."""
    stopper = Stopper(Choice(k_max, alpha, 1.0, c, k_max, 0, round_costs(1.0, c, k_max, 0, curve)))
    estimates = iter(estimates)
    while stopper(next(estimates, alpha)):
        pass
    return stopper.result()


@given(st.floats(0, 1), st.floats(0, 0.6), st.integers(0, 16), st.one_of(st.just(REFERENCE), curves))
def test_a_stopper_told_alpha_for_every_token_stops_where_best_k_would(alpha, c, k_max, curve):
    """With no more to go on than alpha, stopping token by token must land on rates()'s best K (or 0 below
    MIN_GAIN), on any cost curve: a deeper K that pays is never given up at a dip before it."""
    r = rates(alpha, 1.0, c, k_max, 0, curve)
    k = stop(alpha, c, k_max, [], curve).k
    best = max(r)
    assert (k == 0) if best < MIN_GAIN else math.isclose(r[k], best, rel_tol=1e-12)


def test_a_stopper_drafts_a_confident_run_and_stops_before_an_unsure_character():
    steep = CostCurve(tuple(1 + 0.1 * (n - 1) for n in range(1, 257)), "0.1 a row")
    choice = stop(0.8, 0.02, 12, [0.99, 0.99, 0.99, 0.2, 0.99], steep)
    assert choice.k == 3 and choice.estimates == (0.99, 0.99, 0.99, 0.2)  # asked about the 4th, did not draw it
    assert stop(0.8, 0.02, 12, [0.99] * 12, steep).k == 12  # as deep as allowed
    assert stop(0.8, 0.02, 12, [0.01], steep).k == 0  # the first token must promise MIN_GAIN
    # What the chart weighs is what the rule saw: the estimates, then alpha.
    assert math.isclose(choice.expected(5), 1 + 0.99 + 0.99**2 + 0.99**3 + 0.99**3 * 0.2 + 0.99**3 * 0.2 * 0.8)
    assert math.isclose(Choice(2, 0.8, 1.0, 0.0, 2).expected(2), 1 + 0.8 + 0.64)  # no estimates: alpha alone


def test_the_choice_chart_shows_the_chances_a_stopped_draft_weighed():
    from specviz.charts.adaptive import k_choice_bars

    steep = CostCurve(tuple(1 + 0.1 * (n - 1) for n in range(1, 257)), "0.1 a row")
    title = k_choice_bars(stop(0.8, 0.02, 12, [0.99, 0.99, 0.99, 0.2], steep)).layout.title.text
    title = title.replace("<br>", " ")  # wrapped to fit a narrow column
    assert "no deeper K would pay" in title and "0.99, 0.99, 0.20" in title, title
