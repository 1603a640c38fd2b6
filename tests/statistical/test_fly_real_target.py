"""FLy with its showcase drafter, the tiny model, against the real target (marked real_target): the
exactness lab calls it biased at T = 0.5 and T = 1, where the same drafts verified token-wise are
exact (tests/statistical/test_exactness_real_target.py)."""

import pytest
from conftest import EXACTNESS_PROMPT as PROMPT

from specviz.core.settings import Settings
from specviz.teaching.exactness import run_exactness, verdict


@pytest.mark.real_target
@pytest.mark.parametrize("temperature", [0.5, 1.0])
def test_exactness_lab_calls_fly_with_the_tiny_draft_biased(target, tiny, temperature):
    """The paper's pairing: a small draft model's chain, FLy's gate and window on the target's rows.
    A drafted character the usual test rejected is kept when the target is unsure there and the
    next W - 1 characters pass, so the drafter's favourites come out more often than p says."""
    prompt = target.tokenizer.encode(PROMPT)
    settings = Settings(drafter="neural", k=4, temperature=temperature, seed=9400, verification="fly", fly_window=2)
    res = run_exactness(target, prompt, settings, samples=600, draft_model=tiny.model)
    assert res.p_value < 0.001 and verdict(res, 0.001)[0] == "biased", res.p_value
