"""A Sequoia-shaped tree against the real target (marked real_target): the distilled tree with
Sequoia's fixed shape, verified token-wise, is exact at T = 0.5 and T = 1 at every output position
(so every draft depth 1..K). The shape is chosen from rates measured on the training split, never
from the round's target rows, so the token-wise induction holds at every node."""

import pytest
from conftest import EXACTNESS_PROMPT as PROMPT
from conftest import check_lossless

from specviz.core.settings import Settings
from specviz.teaching.exactness import run_exactness


@pytest.mark.real_target
@pytest.mark.parametrize("temperature", [0.5, 1.0])
def test_sequoia_shaped_tree_matches_the_real_target(target, temperature):
    prompt = target.tokenizer.encode(PROMPT)
    settings = Settings(drafter="distilled-tree", tree_shape="sequoia", k=4, temperature=temperature, seed=9500)
    res = run_exactness(target, prompt, settings, samples=600)
    check_lossless(res, f"Sequoia-shaped distilled tree at T={temperature}")
