"""draw(): the exponential race samples p, draws what torch.multinomial draws from the same
generator (so a seed gives the text it gave before), and a one-hot row consumes no randomness."""

import math

import torch

from specviz.sampling import draw, probs_from_logits


def test_draw_is_torch_multinomial_draw_for_draw():
    for seed in range(600):
        V = (2, 5, 65, 100)[seed % 4]
        p = probs_from_logits(
            torch.randn(V, generator=torch.Generator().manual_seed(seed)) * 3, (0.5, 0.8, 1.0)[seed % 3]
        )
        if seed % 5 == 0 and V > 2:  # some tokens impossible (not all but one: a one-hot row draws nothing)
            p[: V // 2] = 0
            p = p / p.sum()
        ours, theirs = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
        for _ in range(4):
            assert draw(p, ours) == int(torch.multinomial(p, 1, generator=theirs))
        assert torch.equal(ours.get_state(), theirs.get_state())  # the same randomness consumed


def test_draw_frequencies_are_p():
    p = torch.tensor([0.5, 0.25, 0.125, 0.0, 0.125], dtype=torch.float64)
    gen, n = torch.Generator().manual_seed(0), 20_000
    counts = torch.bincount(torch.tensor([draw(p, gen) for _ in range(n)]), minlength=5)
    assert counts[3] == 0
    for c, q in zip(counts.tolist(), p.tolist(), strict=True):
        assert abs(c - n * q) <= 5 * math.sqrt(n * q * (1 - q)) + 1e-9  # 5 standard deviations


def test_a_one_hot_row_draws_its_token_and_no_randomness():
    gen = torch.Generator().manual_seed(3)
    before = gen.get_state()
    assert draw(torch.tensor([0.0, 0.0, 1.0, 0.0], dtype=torch.float64), gen) == 2
    assert torch.equal(gen.get_state(), before)
