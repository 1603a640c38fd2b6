"""Accept/reject by hand: seed 001's worked example, trees, temperature 0, and seed 004's rule."""

import pytest
import torch

import specviz.verifiers.nasd_seed as nasd_seed_mod
import specviz.verifiers.tokenwise as verify_mod
from specviz.drafters.base import Draft, chain
from specviz.verifiers import NASDSeed, TokenWise

verify, verify_nasd_seed = TokenWise().verify, NASDSeed().verify

V = 6
H, E, SP, A, P, Q = range(V)  # token ids for 'h', 'e', ' ', 'a', 'p', 'q'


def dist(**probs) -> torch.Tensor:
    names = {"h": H, "e": E, "sp": SP, "a": A, "p": P, "q": Q}
    d = torch.zeros(V, dtype=torch.float64)
    for k, v in probs.items():
        d[names[k]] = v
    assert abs(d.sum() - 1) < 1e-12
    return d


@pytest.fixture
def draws(monkeypatch):
    """Script the uniform draws: verify() takes them in order."""
    queue: list[float] = []
    monkeypatch.setattr(verify_mod, "uniform", lambda gen: queue.pop(0))
    return queue


def test_seed_001_worked_example(draws):
    # "the " -> draft "h", "e", " ", "q". p/q: 0.92/0.31, 0.88/0.40, 0.05/0.35; u = 0.71 rejects " ".
    q = torch.stack([dist(h=0.31, a=0.69), dist(e=0.40, a=0.60), dist(sp=0.35, p=0.65), dist(q=0.5, a=0.5)])
    p = torch.stack([dist(h=0.92, a=0.08), dist(e=0.88, sp=0.12), dist(sp=0.05, a=0.60, p=0.35),
                     dist(q=1.0), dist(a=1.0)])  # fmt: skip
    draws += [0.5, 0.5, 0.71]
    v = verify(chain([H, E, SP, Q], q), p, 1.0, torch.Generator())
    assert [c.accepted for c in v.checks] == [True, True, False]
    assert [round(c.accept_prob, 6) for c in v.checks] == [1.0, 1.0, round(0.05 / 0.35, 6)]
    assert v.path == [0, 1]
    # residual norm(max(0, p - q)): only 'a' has p > q (0.60 > 0), so it is all of the mass
    assert torch.equal(v.residual, dist(a=1.0))
    assert v.correction == A and v.bonus is None
    assert v.emitted(chain([H, E, SP, Q], q)) == [H, E, A]


def test_residual_is_normalised_positive_part(draws):
    q = dist(h=0.5, e=0.3, a=0.2)[None]
    p = torch.stack([dist(h=0.2, e=0.5, a=0.3), dist(p=1.0)])
    draws += [0.9]  # accept_prob for h = 0.2 / 0.5 = 0.4 < 0.9: reject
    v = verify(chain([H], q), p, 1.0, torch.Generator().manual_seed(0))
    assert not v.checks[0].accepted and v.checks[0].accept_prob == pytest.approx(0.4)
    # p - q = (-0.3, 0.2, 0.1) -> (0, 0.2, 0.1) / 0.3
    assert torch.allclose(v.residual, dist(e=2 / 3, a=1 / 3))
    assert v.correction in (E, A)


def test_full_acceptance_takes_bonus_from_last_row(draws):
    p = torch.stack([dist(h=1.0), dist(e=1.0), dist(p=0.25, q=0.75)])
    draws += [0.99, 0.99]
    v = verify(chain([H, E]), p, 1.0, torch.Generator().manual_seed(0))  # one-hot q: accept with p(x) = 1
    assert v.path == [0, 1] and v.correction is None
    assert torch.equal(v.bonus_p, p[2]) and v.bonus in (P, Q)


def test_tree_tries_children_in_turn_with_zeroed_residual(draws):
    # root children: 'h' (node 0) then 'e' (node 1); p at root: h .5, e .3, a .2
    draft = Draft([H, E, A], [-1, -1, 1])
    p = torch.stack([dist(h=0.5, e=0.3, a=0.2), dist(p=1.0), dist(a=0.4, q=0.6), dist(q=1.0)])
    draws += [0.7, 0.5, 0.5]
    v = verify(draft, p, 1.0, torch.Generator().manual_seed(0))
    # 'h' accepted with 0.5: u .7 rejects. Then p = (e .6, a .4): 'e' accepted with 0.6, u .5 accepts.
    # Then node 1's child 'a' (node 2) with p(a) = 0.4: u .5 rejects; nothing left but 'q'.
    assert [(c.node, c.accepted) for c in v.checks] == [(0, False), (1, True), (2, False)]
    assert v.checks[1].accept_prob == pytest.approx(0.6)
    assert torch.allclose(v.checks[1].p, dist(e=0.6, a=0.4))
    assert v.path == [1] and torch.equal(v.residual, dist(q=1.0)) and v.correction == Q
    assert v.emitted(draft) == [E, Q]


def test_all_children_rejected_samples_what_is_left(draws):
    draft = Draft([H, E], [-1, -1])
    p = torch.stack([dist(h=0.5, e=0.3, a=0.2), dist(p=1.0), dist(p=1.0)])
    draws += [0.6, 0.7]  # h: 0.6 >= 0.5 rejects; e: p = (e .6, a .4), 0.7 >= 0.6 rejects
    v = verify(draft, p, 1.0, torch.Generator().manual_seed(0))
    assert v.path == [] and torch.equal(v.residual, dist(a=1.0)) and v.correction == A


def test_temperature_zero_accepts_exactly_the_argmax_without_randomness():
    p = torch.stack([dist(h=1.0), dist(sp=1.0), dist(a=1.0)])
    q = torch.stack([dist(h=1.0), dist(e=1.0)])  # greedy drafts are one-hot too
    gen = torch.Generator().manual_seed(0)
    state = gen.get_state()
    v = verify(chain([H, E], q), p, 0.0, gen)
    assert [c.accepted for c in v.checks] == [True, False] and all(c.u is None for c in v.checks)
    assert v.correction == SP and torch.equal(gen.get_state(), state)


def test_nasd_seed_variant_draws_the_correction_afresh(monkeypatch):
    # The comparison sample is 'a' (not the draft 'h'); the correction is a second, fresh draw.
    samples = [A, H]
    monkeypatch.setattr(nasd_seed_mod, "draw", lambda probs, gen: samples.pop(0))
    p = torch.stack([dist(h=0.5, a=0.5), dist(p=1.0)])
    v = verify_nasd_seed(chain([H]), p, 1.0, torch.Generator())
    assert v.checks[0].sampled == A and not v.checks[0].accepted
    assert v.correction == H  # the rejected draft token comes back: that is the bias


def test_nasd_seed_variant_refuses_trees():
    with pytest.raises(ValueError, match="chains only"):
        verify_nasd_seed(Draft([H, E], [-1, -1]), torch.ones(3, V) / V, 1.0, torch.Generator())
