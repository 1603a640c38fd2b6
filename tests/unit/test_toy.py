"""The acceptance-math toy: its formulas against direct computation, and its simulation against
p with fixed seeds (the chi-square p-values are the same on every run)."""

import math

import pytest
import torch

from specviz.teaching import toy
from specviz.teaching.stats import expected_tokens_per_round

PAIRS = [
    dict(),  # seed 003's: random logits, a draft at temperature 0.5
    dict(shape="bump", shift=3, temperature=1.0),
    dict(V=8, sharpness=3.0, temperature=2.0, seed=7),
    dict(temperature=0.0),  # a greedy draft: q one-hot
]


@pytest.mark.parametrize("kw", PAIRS)
def test_alpha_residual_and_exact_output(kw):
    p, q = toy.make_pair(**kw)
    assert p.sum().item() == pytest.approx(1) and q.sum().item() == pytest.approx(1)
    o = toy.overlap(p, q)
    assert o.alpha == pytest.approx(sum(min(a, b) for a, b in zip(p.tolist(), q.tolist(), strict=True)))
    assert o.alpha == pytest.approx(1 - toy.tv(p, q))  # alpha = 1 - TV(p, q)
    assert o.residual.sum().item() == pytest.approx(1)
    assert (o.residual >= 0).all() and (o.residual[q >= p] == 0).all()  # mass only where q under-proposes
    assert torch.allclose(toy.output_distribution(p, q), p, atol=1e-12)  # the step is exact
    if o.alpha < 0.999:
        assert toy.tv(toy.output_distribution(p, q, "p"), p) > 1e-3  # the mistake is not


def test_the_pair_follows_its_knobs():
    p, q = toy.make_pair(V=16, shape="bump", temperature=1.0, shift=0)
    assert torch.allclose(p, q)
    p, q = toy.make_pair(V=16, shape="bump", temperature=1.0, shift=5)
    assert torch.allclose(q, p.roll(5))
    p, q = toy.make_pair(V=16, sharpness=0.0)
    assert torch.allclose(p, torch.full((16,), 1 / 16, dtype=torch.float64))
    p, q = toy.make_pair(temperature=0.0)
    assert q.max().item() == 1.0 and q.argmax() == p.argmax()
    assert toy.overlap(p, q).alpha == pytest.approx(p.max().item())  # a greedy draft is accepted w.p. max p
    a, _ = toy.make_pair(seed=1)
    b, _ = toy.make_pair(seed=2)
    assert not torch.allclose(a, b)
    with pytest.raises(ValueError, match="vocabulary"):
        toy.make_pair(V=1)
    with pytest.raises(ValueError, match="shape"):
        toy.make_pair(shape="square")
    with pytest.raises(ValueError, match="temperature"):
        toy.make_pair(temperature=-1)


def test_equal_distributions_never_reject():
    p, q = toy.make_pair(temperature=1.0)
    o = toy.overlap(p, q)
    assert o.alpha == pytest.approx(1) and o.residual is None
    sim = toy.simulate(p, q, 5000, seed=1)
    assert sim.accepted.all()
    assert toy.per_k(o.alpha, sim.accepted)[3]["expected"] == 5.0  # K + 1
    assert toy.per_k(o.alpha, sim.accepted)[3]["measured"] == 5.0


@pytest.mark.parametrize("kw", PAIRS)
def test_simulation_converges_to_p(kw):
    p, q = toy.make_pair(**kw)
    sim = toy.simulate(p, q, 50_000, seed=11)
    stat, dof, p_value = toy.fit(sim.tokens, p)
    assert dof >= 3 and p_value > 0.001, f"chi-square {stat:.1f} on {dof} dof"
    assert sim.accepted.double().mean().item() == pytest.approx(toy.overlap(p, q).alpha, abs=0.01)
    curve = toy.convergence(sim.tokens, p)
    assert curve[-1][0] == 50_000 and curve[-1][1] < 0.02
    assert curve[-1][1] < curve[0][1] / 5  # the TV falls as the steps add up
    assert curve[-1][1] == pytest.approx(toy.tv(toy.histogram(sim.tokens, len(p)), p))


def test_redrawing_from_p_is_detected_as_biased():
    p, q = toy.make_pair()
    sim = toy.simulate(p, q, 50_000, seed=11, correction="p")
    assert toy.fit(sim.tokens, p)[2] < 1e-6
    limit = toy.tv(toy.output_distribution(p, q, "p"), p)
    assert toy.convergence(sim.tokens, p)[-1][1] == pytest.approx(limit, abs=0.01)


def test_simulation_is_seeded():
    p, q = toy.make_pair()
    a, b = toy.simulate(p, q, 1000, seed=3), toy.simulate(p, q, 1000, seed=3)
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.accepted, b.accepted)
    assert not torch.equal(a.tokens, toy.simulate(p, q, 1000, seed=4).tokens)
    with pytest.raises(ValueError, match="steps"):
        toy.simulate(p, q, 0)


def test_tokens_per_round():
    # Hand-made flags: K=2 -> rounds [T T](3) [F](1) [T F](2) [T T](3), the last lone flag unused.
    flags = torch.tensor([True, True, False, True, False, True, True, True])
    assert toy.measured_tokens_per_round(flags, 2) == pytest.approx((3 + 1 + 2 + 3) / 4)
    p, q = toy.make_pair()
    alpha = toy.overlap(p, q).alpha
    rows = toy.per_k(alpha, toy.simulate(p, q, 100_000, seed=5).accepted)
    assert [r["k"] for r in rows] == list(range(1, 9))
    for r in rows:
        assert r["expected"] == expected_tokens_per_round(alpha, r["k"]) and r["most"] == r["k"] + 1
        assert r["measured"] == pytest.approx(r["expected"], rel=0.02)
    assert math.isnan(toy.measured_tokens_per_round(flags[:1], 2))  # no complete round
