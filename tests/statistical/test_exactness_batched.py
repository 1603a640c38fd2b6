"""Statistical exactness for sequences decoded inside a batch of 8 (specviz/core/batch.py: one target pass
a round for the 8): each run of K + 1 tokens follows the real target's exact distribution at every output
position, so at every draft position 1..K, for a sampled chain, a sampled tree and a deterministic tree."""

import pytest
from conftest import EXACTNESS_PROMPT as PROMPT
from conftest import check_lossless

from specviz.core.settings import Settings
from specviz.teaching.exactness import run_exactness

MODES = [  # (drafter, what it drafts, seed)
    ("distilled", "sampled chain", 11000),
    ("eagle3-tree", "sampled tree", 11100),
    ("distilled-tree", "deterministic tree", 11200),
]


@pytest.mark.real_target
@pytest.mark.parametrize("drafter, path, seed", MODES)
def test_modes_inside_a_batch_of_8_match_the_real_target(target, drafter, path, seed):
    prompt = target.tokenizer.encode(PROMPT)
    settings = Settings(drafter=drafter, k=4, temperature=1.0, seed=seed)
    res = run_exactness(target, prompt, settings, samples=600, batch_size=8)
    check_lossless(res, f"{drafter} ({path}) inside a batch of 8")
