"""Typical acceptance with Medusa against the real target (marked real_target): the exactness lab
calls it biased."""

import pytest

from specviz.core.settings import Settings
from specviz.teaching.exactness import run_exactness, verdict


@pytest.mark.real_target
def test_exactness_lab_calls_typical_acceptance_with_medusa_biased(target):
    """Medusa's own pairing: its candidate tree verified by typical acceptance on the real target.
    A head's top candidate is kept whenever the target finds it typical, so it comes out more often
    than p says; the same tree verified token-wise is exact (tests/unit/test_exactness.py)."""
    prompt = target.tokenizer.encode("the cat sat on the mat.\nthe cat sat on the")
    settings = Settings(drafter="medusa", k=3, temperature=1.0, seed=9100, verification="typical")
    res = run_exactness(target, prompt, settings, samples=150)  # measured: p ~ 1e-255, total variation 0.92
    assert res.p_value < 0.001 and verdict(res, 0.001)[0] == "biased", res.p_value
