"""Medusa's typical acceptance: the threshold, the walk, greedy agreement, and the exactness lab
calling it biased (it is lossy by design; with Medusa on the real target:
tests/statistical/test_typical_real_target.py)."""

import math

import pytest
import torch

import specviz.verifiers.typical as typical_mod
from specviz.core.settings import Settings
from specviz.drafters.base import Draft, chain
from specviz.teaching.exactness import run_exactness, verdict
from specviz.verifiers import TokenWise, Typical
from specviz.verifiers.typical import typical_threshold

verify = Typical().verify


def test_threshold_falls_with_entropy():
    assert typical_threshold(torch.tensor([1.0, 0, 0, 0], dtype=torch.float64)) == pytest.approx(0.09)  # min(0.09, 0.3)
    assert typical_threshold(torch.full((4,), 0.25, dtype=torch.float64)) == pytest.approx(0.3 / 4)  # 0.3 e^-log 4
    p = torch.tensor([0.7, 0.2, 0.1], dtype=torch.float64)
    h = -sum(x * math.log(x) for x in (0.7, 0.2, 0.1))
    assert typical_threshold(p) == pytest.approx(min(0.09, 0.3 * math.exp(-h)))


def test_first_typical_child_is_kept_and_the_last_token_comes_from_p(monkeypatch):
    p = torch.tensor([0.5, 0.3, 0.12, 0.08], dtype=torch.float64)  # threshold 0.09: 0, 1, 2 pass, 3 does not
    p_rows = torch.stack([p, p, p])
    drawn = []
    monkeypatch.setattr(typical_mod, "draw", lambda probs, gen: drawn.append(probs) or 1)
    v = verify(Draft([3, 2, 3], [-1, -1, 1]), p_rows, 1.0, torch.Generator())  # root: 3 (no), 2 (yes); then 3 (no)
    assert [c.accepted for c in v.checks] == [False, True, False] and v.path == [1]
    assert v.correction == 1 and torch.equal(drawn[0], p)  # from p itself, not a residual
    assert all(c.u is None for c in v.checks)  # no uniform draws at all
    v = verify(chain([0, 1]), p_rows, 1.0, torch.Generator())
    assert v.path == [0, 1] and v.bonus == 1


def test_greedy_typical_is_token_wise():
    V = 5
    p_rows = torch.nn.functional.one_hot(torch.tensor([2, 4, 1, 3]), V).double()
    for tokens, parents in (([2, 4, 0], [-1, 0, 1]), ([1, 2, 4, 3], [-1, -1, 1, 2])):
        d = Draft(tokens, parents)
        t = TokenWise().verify(d, p_rows, 0.0, torch.Generator())
        assert verify(d, p_rows, 0.0, torch.Generator()).emitted(d) == t.emitted(d)


@pytest.mark.slow  # 1,500 speculative runs and their chi-square test (~2.5 s)
def test_exactness_lab_calls_typical_acceptance_biased(tiny):
    prompt = tiny.tokenizer.encode("the cat sat on the mat.\nthe cat sat on the")
    settings = Settings(drafter="trigram", k=3, temperature=1.0, seed=9000, verification="typical")
    res = run_exactness(tiny, prompt, settings, samples=1500)
    assert res.p_value < 0.001 and verdict(res, 0.001)[0] == "biased"
