"""Statistical exactness: the first three tokens of many speculative runs follow the target's
exact distribution (computed by enumeration) for every lossless path; seed 004's NASD rule does
not. Seeds are fixed, so the p-values are the same on every run of CI."""

import math

import pytest
import torch

from specviz.engine import Settings
from specviz.exactness import chi_square, exact_distribution, run_exactness
from specviz.sampling import probs_from_logits

PROMPT = "the cat sat on the mat.\nthe cat sat on the"  # repeats: every n-gram drafter has drafts


def test_exact_distribution_is_the_chain_rule(tiny):
    prompt = tiny.tokenizer.encode(PROMPT)
    joint = exact_distribution(tiny.model, prompt, 0.7)
    assert joint.sum().item() == pytest.approx(1.0, abs=1e-9)
    with torch.no_grad():
        logits, _ = tiny.model(torch.tensor([prompt + [5, 7]]), torch.arange(len(prompt) + 2))
    p = probs_from_logits(logits[0, -3:], 0.7)  # after the prompt, after +5, after +5 7
    assert joint[5, 7, 9].item() == pytest.approx((p[0, 5] * p[1, 7] * p[2, 9]).item(), rel=1e-4)
    assert torch.allclose(joint.sum((1, 2)), p[0], atol=1e-6)


def test_chi_square_sanity():
    probs = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    stat, dof, p = chi_square(torch.tensor([500, 300, 200]), probs)
    assert stat == pytest.approx(0.0) and dof == 2 and p == pytest.approx(1.0)
    stat, dof, p = chi_square(torch.tensor([600, 250, 150]), probs)
    assert stat == pytest.approx(100**2 / 500 + 50**2 / 300 + 50**2 / 200)
    assert p == pytest.approx(math.exp(-stat / 2))  # the chi-square survival function for 2 dof
    # temperature 0: a single outcome
    assert chi_square(torch.tensor([0, 10, 0]), torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64))[2] == 1.0
    assert chi_square(torch.tensor([1, 9, 0]), torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64))[2] == 0.0


LOSSLESS = [
    ("bigram", "sampled chain"),
    ("trigram", "sampled chain"),
    ("prompt-lookup", "deterministic chain"),
    ("nasd", "deterministic chain"),
    ("trie", "deterministic tree"),
]


@pytest.mark.parametrize("temperature", [1.0, 0.7])
@pytest.mark.parametrize("drafter, path", LOSSLESS)
def test_lossless_paths_match_the_target(tiny, drafter, path, temperature):
    prompt = tiny.tokenizer.encode(PROMPT)
    settings = Settings(drafter=drafter, k=3, temperature=temperature, seed=1000)
    res = run_exactness(tiny, prompt, settings, samples=1500)
    assert res.dof >= 5, "too few populated outcomes for a meaningful test"
    assert res.p_value >= 0.001, f"{drafter} ({path}) at T={temperature}: p={res.p_value:.2e}, TV={res.tv_distance:.3f}"


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_neural_draft_matches_the_target(target, tiny, temperature):
    prompt = target.tokenizer.encode(PROMPT)
    settings = Settings(drafter="neural", k=3, temperature=temperature, seed=2000)
    res = run_exactness(target, prompt, settings, samples=800, draft_model=tiny.model)
    assert res.dof >= 5 and res.p_value >= 0.001, f"p={res.p_value:.2e}"


def test_nasd_seed_variant_is_detected_as_biased(tiny):
    prompt = tiny.tokenizer.encode(PROMPT)
    settings = Settings(drafter="nasd", k=3, temperature=1.0, seed=3000, verification="nasd-seed")
    biased = run_exactness(tiny, prompt, settings, samples=1500)
    assert biased.p_value < 0.001
    lossless = run_exactness(tiny, prompt, Settings(**{**vars(settings), "verification": "lossless"}), samples=1500)
    assert biased.tv_distance > lossless.tv_distance + 0.05
