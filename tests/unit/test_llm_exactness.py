"""The exactness lab on a real model (specviz/teaching/exactness.py): the joint distribution of all K + 1 tokens
enumerated with pruning, checked against fresh passes of the tiny random Llama (tests/llm_models.py), and the
lab's verdicts there: lossless chains and trees pass, NASD's own rule and FLy are called biased."""

import math

import pytest
import torch

from specviz.core.settings import Settings
from specviz.teaching.exactness import pruned_distribution, reference, run_exactness, verdict
from tests.llm_models import checkpoint

PROMPT = "the cat sat on the mat. the cat sat on the mat. the cat "


def fresh_probs(ck, tokens: list[int]) -> torch.Tensor:
    """softmax of a from-scratch causal pass (no cache) at every row, float64. (T, V)"""
    with torch.no_grad():
        return torch.softmax(ck.model(torch.tensor([tokens])).logits[0].double(), -1)


def sequence_prob(ck, prompt: list[int], seq: tuple[int, ...]) -> float:
    """P(seq | prompt) by the chain rule over one fresh pass."""
    p = fresh_probs(ck, prompt + list(seq))
    return math.prod(float(p[len(prompt) - 1 + j, x]) for j, x in enumerate(seq))


@pytest.mark.parametrize("kind", ["llama", "gpt2"])
def test_without_pruning_the_enumeration_is_the_full_joint(kind):
    ck = checkpoint(kind)  # float64
    prompt = ck.tokenizer.encode(PROMPT)
    V = ck.config.vocab_size
    pr = pruned_distribution(reference(ck, prompt, 1.0), V, 2, 0.0, V * V)
    assert len(pr.cells) == V * V and pr.rest == 0.0
    p1 = fresh_probs(ck, prompt)[-1]
    with torch.no_grad():
        rows = torch.softmax(ck.model(torch.tensor([prompt + [x] for x in range(V)])).logits[:, -1].double(), -1)
    full = p1[:, None] * rows  # (V, V)
    got = torch.zeros(V, V, dtype=torch.float64)
    for (a, b), q in zip(pr.cells, pr.probs.tolist(), strict=True):
        got[a, b] = q
    torch.testing.assert_close(got, full, rtol=0, atol=1e-12)
    assert abs(float(pr.expected().sum()) - 1) < 1e-9


@pytest.mark.parametrize("min_mass, max_prefixes", [(1e-3, 512), (1e-4, 20)])
def test_pruned_cells_are_exact_and_the_rest_is_the_pruned_mass(min_mass, max_prefixes):
    ck = checkpoint("llama", scale=1.0)
    prompt = ck.tokenizer.encode(PROMPT)
    pr = pruned_distribution(reference(ck, prompt, 1.0), ck.config.vocab_size, 3, min_mass, max_prefixes)
    assert 0 < len(pr.cells) <= max_prefixes and len(set(pr.cells)) == len(pr.cells)
    assert all(len(c) == 3 for c in pr.cells) and float(pr.probs.min()) >= min_mass
    assert pr.rest > 0 and abs(float(pr.probs.sum()) + pr.rest - 1) < 1e-9  # cells + rest = 1, float64
    for cell, q in zip(pr.cells, pr.probs.tolist(), strict=True):
        assert abs(q - sequence_prob(ck, prompt, cell)) < 1e-9, cell


# (drafter, verification, draft model: None, "self" (the target) or an init scale of the same weights, knobs,
# runs, the verdict expected). A flatter copy of the target (scale 0.7: the same weights times 0.7) drafts what
# the target likes, but too evenly: FLy's deferred window then keeps many of its rejected tokens.
CASES = [
    ("prompt-lookup", "lossless", None, {}, 600, "exact"),  # a deterministic chain
    ("suffix", "lossless", None, {}, 600, "exact"),  # a deterministic tree
    ("neural", "lossless", 0.7, {}, 600, "exact"),  # a sampled chain
    ("neural-tree", "lossless", 0.7, {}, 400, "exact"),  # a sampled tree
    ("neural", "nasd-seed", "self", {}, 1000, "biased"),
    ("neural", "fly", 0.7, {"fly_window": 2}, 400, "biased"),
]


@pytest.mark.slow  # 400-1,000 runs a case: 10-25 s each on a loaded 2-core machine
@pytest.mark.parametrize("drafter, verification, draft, knobs, samples, want", CASES)
def test_the_lab_on_a_real_model(drafter, verification, draft, knobs, samples, want):
    ck = checkpoint("llama", scale=1.0)
    prompt = ck.tokenizer.encode(PROMPT)
    model = None if draft is None else ck.model if draft == "self" else checkpoint("llama", scale=draft).model
    settings = Settings(drafter=drafter, k=2, temperature=1.0, verification=verification, seed=1, **knobs)
    res = run_exactness(ck, prompt, settings, samples, draft_model=model)
    kind, sentence = verdict(res, 0.001)
    assert res.cells is not None and res.draft_depths == 2 and "all 3 tokens" in sentence
    assert abs(float(res.expected.sum()) - 1) < 1e-9 and int(res.observed.sum()) == samples
    assert res.first.dof >= 5, res.first  # the enumeration has cells enough to test
    assert kind == want, (sentence, res.first, res.joint)


def test_a_real_model_runs_one_at_a_time():
    ck = checkpoint("llama")
    with pytest.raises(ValueError, match="one at a time"):
        run_exactness(ck, ck.tokenizer.encode(PROMPT), Settings(k=2, temperature=1.0), 10, batch_size=4)
