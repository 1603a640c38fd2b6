"""Statistical exactness against the real target (marked real_target): every lossless mode that
belongs to it, adaptive K, sampled trees both ways, and the mismatch rule caught as biased
(the tiny model's: tests/unit/test_exactness.py)."""

from dataclasses import replace

import pytest
from conftest import EXACTNESS_ALPHA as ALPHA
from conftest import EXACTNESS_PROMPT as PROMPT
from conftest import LOSSLESS, check_lossless

from specviz.core.settings import Settings
from specviz.drafters import drafter_class, drafter_names
from specviz.teaching.exactness import (
    run_exactness,
    verdict,
)

NEURAL_DRAFTERS = tuple(d for d in drafter_names() if "draft_model" in drafter_class(d).needs)


@pytest.mark.real_target
@pytest.mark.parametrize("drafter, path", LOSSLESS)
def test_lossless_paths_match_the_real_target(target, drafter, path):
    prompt = target.tokenizer.encode(PROMPT)
    settings = Settings(drafter=drafter, k=4, temperature=1.0, seed=4000)
    check_lossless(run_exactness(target, prompt, settings, samples=400), f"{drafter} ({path}) on the target")


# Every lossless mode that belongs to the real target, at T = 0.5 and 1, K = 4 (so every draft
# position is covered): (drafter, what it drafts, verification, seed). The distilled table is the
# real target's; suffix decoding's corpus index uses its vocabulary; layer-skip drafts with its
# own first layers; block verification decides chains jointly.
REAL_TARGET_MODES = [
    ("distilled", "sampled chain", "lossless", 5000),
    ("distilled-tree", "deterministic tree", "lossless", 5000),
    ("suffix", "deterministic tree", "lossless", 7000),
    ("layer-skip", "sampled chain", "lossless", 7000),
    ("distilled", "sampled chain", "block", 8000),
    ("nasd", "deterministic chain", "block", 8000),
    ("medusa", "deterministic tree", "lossless", 9000),  # heads on the target's own cached features
    ("trie", "deterministic tree", "traversal", 9000),
    ("neural-tree", "sampled tree", "traversal", 9000),  # the tiny model drafts, siblings without replacement
    ("eagle3-tree", "sampled tree", "traversal", 9100),  # the EAGLE-3 head drafts, siblings without replacement
    ("lookahead", "deterministic tree", "lossless", 9000),
    ("eagle3", "sampled chain", "lossless", 9000),
    ("eagle3-tree", "sampled tree", "lossless", 9000),
    ("mtp", "sampled chain", "lossless", 9200),  # one MTP module per depth: K = 4 = D covers every depth
    ("dflash", "sampled chain", "lossless", 9300),  # K slots from one head pass, each drawn from its own q
    ("dflash-tree", "deterministic tree", "lossless", 9300),  # DDTree: best first from the slots' distributions
    ("dflash-tree", "deterministic tree", "traversal", 9300),
]


@pytest.mark.real_target
@pytest.mark.parametrize("temperature", [0.5, 1.0])
@pytest.mark.parametrize("drafter, path, verification, seed", REAL_TARGET_MODES)
def test_modes_match_the_real_target(target, tiny, drafter, path, verification, seed, temperature):
    prompt = target.tokenizer.encode(PROMPT)
    settings = Settings(drafter=drafter, k=4, temperature=temperature, seed=seed, verification=verification)
    draft_model = tiny.model if drafter in NEURAL_DRAFTERS else None
    res = run_exactness(target, prompt, settings, samples=600, draft_model=draft_model)
    check_lossless(res, f"{drafter} ({path}), {verification} verification, at T={temperature}")


@pytest.mark.real_target
def test_adaptive_k_matches_the_real_target(target):
    """K chosen from past rounds only: the runs stay exact (K varies from round to round within a run)."""
    prompt = target.tokenizer.encode(PROMPT)
    settings = Settings(drafter="distilled", k=4, k_auto=True, temperature=1.0, seed=6000)
    res = run_exactness(target, prompt, settings, samples=600)
    assert res.impossible == 0 and res.p_value >= ALPHA and verdict(res, ALPHA)[0] == "exact"


@pytest.mark.real_target
@pytest.mark.parametrize("temperature", [0.5, 1.0])
@pytest.mark.parametrize("sampling", ["with-replacement", "without-replacement"])
def test_neural_tree_matches_the_real_target(target, tiny, sampling, temperature):
    """Sampled trees, both schemes: 16 nodes over K = 3 depths, so most nodes have several children."""
    prompt = target.tokenizer.encode(PROMPT)
    settings = Settings(drafter="neural-tree", k=3, temperature=temperature, seed=7000, tree_sampling=sampling)
    res = run_exactness(target, prompt, settings, samples=500, draft_model=tiny.model)
    check_lossless(res, f"neural-tree ({sampling}) at T={temperature}")


@pytest.mark.real_target
def test_replacement_mismatch_on_the_neural_tree_is_detected_as_biased(target, tiny):
    """Siblings drawn without replacement, verified as if with: every child after the first is tried
    against the node's full q, which understates the q it was drawn from. Six children per node and a
    prompt where the tiny model often misses its first guess (on PROMPT it rarely does: no test power)."""
    prompt = target.tokenizer.encode("ROMEO:\nBut soft, what light")
    settings = Settings(drafter="neural-tree", k=3, temperature=1.0, seed=8000, verification="replacement-mismatch",
                        neural_tree_children=6)  # fmt: skip
    biased = run_exactness(target, prompt, settings, samples=500, draft_model=tiny.model)
    assert biased.p_value < ALPHA and verdict(biased, ALPHA)[0] == "biased", biased.p_value
    lossless = replace(settings, verification="lossless")
    check_lossless(
        run_exactness(target, prompt, lossless, samples=500, draft_model=tiny.model), "neural-tree, 6 children"
    )
