"""Sequoia-shaped trees against the real target (marked real_target): every drafter with the trait
``shaped`` (from the registry), its tree of Sequoia's fixed shape verified token-wise, is exact at
T = 0.5 and T = 1 at every output position (so every draft depth 1..K). The shape is chosen from rates
measured on the training split, never from the round's target rows, and a sampled tree's siblings are
still drawn as the verifier assumes, so the token-wise induction holds at every node."""

import pytest
from conftest import EXACTNESS_PROMPT as PROMPT
from conftest import check_lossless

from specviz.core.settings import Settings
from specviz.drafters import drafter_names
from specviz.teaching.exactness import run_exactness


@pytest.mark.real_target
@pytest.mark.parametrize("temperature", [0.5, 1.0])
@pytest.mark.parametrize("drafter", drafter_names(shaped=True))
def test_sequoia_shaped_tree_matches_the_real_target(target, tiny, drafter, temperature):
    prompt = target.tokenizer.encode(PROMPT)
    settings = Settings(drafter=drafter, tree_shape="sequoia", k=4, temperature=temperature, seed=9500)
    res = run_exactness(target, prompt, settings, samples=400, draft_model=tiny.model)
    check_lossless(res, f"Sequoia-shaped {drafter} at T={temperature}")
