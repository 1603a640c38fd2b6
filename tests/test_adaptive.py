"""Adaptive K: the model's arithmetic, its choices at the extremes, probing, and that the engine
with K auto stays exact (greedy equals the baseline for every drafter)."""

import pytest
import torch

from models.checkpoint import load_checkpoint
from specviz.adaptive import MIN_GAIN, PROBE, AdaptiveK, expected_tokens, round_cost, verify_cost
from specviz.drafters import DRAFTERS
from specviz.engine import Generation, Settings


def test_expected_tokens_is_the_geometric_sum():
    assert expected_tokens(0.5, 0) == 1.0
    assert expected_tokens(0.5, 3) == pytest.approx(1 + 0.5 + 0.25 + 0.125)
    assert expected_tokens(1.0, 4) == 5.0
    assert verify_cost(1) == 1.0 and verify_cost(5) > verify_cost(2) > 1.0


def learnt(alpha: float, k_max: int = 12, c: float = 0.02) -> AdaptiveK:
    """A policy whose estimate has settled at per-level acceptance ``alpha`` (chains)."""
    a = AdaptiveK(k_max, c)
    a.successes, a.trials, a.tokens, a.levels = 1000 * alpha, 1000.0, 100.0, 100.0
    return a


def test_update_counts_levels_until_the_first_rejection():
    a = AdaptiveK(8, 0.02)
    a.update(4, 4, 4, 2)  # two levels accepted, the third rejected: 3 trials
    a.update(4, 4, 4, 4)  # all four accepted: 4 trials, no failure
    assert a.successes == pytest.approx(0.9 * 2 + 4) and a.trials == pytest.approx(0.9 * 3 + 4)
    assert a.alpha == pytest.approx((5.8 + 1) / (6.7 + 2))
    a.update(0, 0, 0, 0)  # a K = 0 round teaches nothing
    assert a.trials == pytest.approx(6.7) and a.idle == 1


def test_confident_drafts_go_deep_and_weak_ones_not_at_all():
    deep = learnt(0.95).choose(12)
    assert deep.k >= 8 and deep.rates[deep.k] == max(deep.rates)
    none = learnt(0.1).choose(12)
    assert none.k == 0 and max(none.rates) < MIN_GAIN
    assert learnt(0.95).choose(3).k == 3  # never above the engine's limit
    cands = deep.candidates()
    assert cands[0] == {"k": 0, "expected_tokens": 1.0, "cost": 1.0, "tokens_per_cost": 1.0}
    assert cands[5]["tokens_per_cost"] == pytest.approx(cands[5]["expected_tokens"] / round_cost(5, 1.0, 0.02))


def test_an_expensive_drafter_needs_more_acceptance():
    cheap, dear = learnt(0.6, c=0.02).choose(12), learnt(0.6, c=0.6).choose(12)
    assert cheap.k > dear.k


def test_idle_rounds_probe_with_a_growing_wait():
    a = learnt(0.1)
    ks = []
    for _ in range(PROBE * 8):
        c = a.choose(12)
        ks.append(c.k)
        a.update(c.k, c.k, c.k, 0)  # a probe that is rejected
    probes = [i for i, k in enumerate(ks) if k]
    assert ks[:PROBE] == [0] * PROBE and len(probes) >= 2
    gaps = [b - a for a, b in zip(probes, probes[1:], strict=False)]
    assert all(g2 > g1 for g1, g2 in zip(gaps, gaps[1:], strict=False)) and gaps[0] > PROBE


@pytest.fixture(scope="module")
def target64():
    return load_checkpoint("target", dtype=torch.float64)


@pytest.fixture(scope="module")
def tiny64():
    return load_checkpoint("tiny", dtype=torch.float64)


@pytest.mark.parametrize("drafter", [d for d in DRAFTERS if d != "none"])
def test_greedy_with_k_auto_equals_the_baseline(target64, tiny64, drafter):
    prompt = target64.tokenizer.encode("ROMEO:\nBut soft, what light through yonder window breaks?\nROMEO:\nBut soft")
    base = Generation(target64, prompt, Settings(drafter="none", temperature=0, max_new_tokens=300)).run()
    run = Generation(target64, prompt, Settings(drafter=drafter, k=8, k_auto=True, temperature=0,
                                                max_new_tokens=300), tiny64.model).run()  # fmt: skip
    assert run.tokens == base.tokens
    assert all(r.k_choice is not None and len(r.draft_tokens) <= r.k_choice.k * 64 for r in run.rounds)
