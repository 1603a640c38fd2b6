"""draw() samples p by inverse CDF, never a token of probability 0, and a one-hot row consumes no
randomness; Stream hands out torch's own uniforms, in order, and a seed repeats them."""

import math
from itertools import accumulate

import torch

from specviz.core.sampling import LARGE_ROW, Stream, draw, draw_cumulative, draw_rows, probs_from_logits, uniform


def test_draw_frequencies_are_p():
    p = torch.tensor([0.5, 0.25, 0.125, 0.0, 0.125], dtype=torch.float64)
    for gen in (torch.Generator().manual_seed(0), Stream().manual_seed(0)):
        n = 20_000
        counts = torch.bincount(torch.tensor([draw(p, gen) for _ in range(n)]), minlength=5)
        assert counts[3] == 0
        for c, q in zip(counts.tolist(), p.tolist(), strict=True):
            assert abs(c - n * q) <= 5 * math.sqrt(n * q * (1 - q)) + 1e-9  # 5 standard deviations


def test_draw_is_the_inverse_cdf_of_its_uniform():
    for seed in range(300):
        V = (2, 5, 65, 100)[seed % 4]
        p = probs_from_logits(torch.randn(V, generator=torch.Generator().manual_seed(seed)) * 3, 0.8)
        ours, theirs = Stream().manual_seed(seed), Stream().manual_seed(seed)
        for _ in range(4):
            u = uniform(theirs)
            cdf = p.cumsum(0)
            assert draw(p, ours) == int((cdf <= u * cdf[-1]).sum())  # the first token whose CDF passes u


def test_draw_never_returns_an_impossible_token_at_the_ends_of_u():
    p = torch.tensor([0.0, 0.3, 0.0, 0.7, 0.0, 0.0], dtype=torch.float64)
    for u, want in ((0.0, 1), (0.3 - 1e-12, 1), (0.3, 3), (1 - 2**-53, 3)):
        gen = Stream()
        gen._buffer = [u]  # the next uniform
        assert draw(p, gen) == want
    # u * total rounding up to total (total just below 1): still the last possible token
    q = torch.tensor([0.0, 0.5, 0.5 - 2**-52, 0.0], dtype=torch.float64)
    gen = Stream()
    gen._buffer = [1 - 2**-53]
    assert draw(q, gen) == 2


def test_draw_cumulative_is_draw_from_the_same_row():
    for seed in range(100):
        p = probs_from_logits(torch.randn(65, generator=torch.Generator().manual_seed(seed)) * 3, 0.8)
        p[seed % 65] = 0.0  # a token that cannot occur
        ours, theirs = Stream().manual_seed(seed), Stream().manual_seed(seed)
        cum = list(accumulate(p.tolist()))
        for _ in range(4):
            assert draw_cumulative(cum, ours) == draw(p, theirs)
    q = [0.0, 0.5, 0.5 - 2**-52, 0.0]  # u * total rounding up to total: the last possible token
    gen = Stream()
    gen._buffer = [1 - 2**-53]
    assert draw_cumulative(list(accumulate(q)), gen) == 2


def test_draw_rows_is_draw_on_each_row_in_order():
    """One copy of every row (a parallel drafter's slots), the same tokens and the same stream as draw() row by
    row; one-hot rows among them take no randomness; rows too wide to copy go to draw()'s wide path."""
    for seed in range(20):
        probs = probs_from_logits(torch.randn(8, 65, generator=torch.Generator().manual_seed(seed)) * 3, 0.8)
        probs[seed % 8] = probs_from_logits(probs[seed % 8].log(), 0)  # a one-hot row
        ours, theirs = Stream().manual_seed(seed), Stream().manual_seed(seed)
        tokens, rows = draw_rows(probs, ours)
        assert tokens == [draw(row, theirs) for row in probs] and rows == probs.tolist()
        assert uniform(ours) == uniform(theirs)  # the same draws were used up
    wide = probs_from_logits(torch.randn(2, LARGE_ROW + 1, generator=torch.Generator().manual_seed(1)), 1.0)
    ours, theirs = Stream().manual_seed(5), Stream().manual_seed(5)
    tokens, rows = draw_rows(wide, ours)
    assert tokens == [draw(row, theirs) for row in wide] and rows is None


def test_a_one_hot_row_draws_its_token_and_no_randomness():
    for gen in (torch.Generator().manual_seed(3), Stream().manual_seed(3)):
        before = gen.get_state()
        assert draw(torch.tensor([0.0, 0.0, 1.0, 0.0], dtype=torch.float64), gen) == 2
        assert torch.equal(gen.get_state(), before)
        assert not getattr(gen, "_buffer", [])


def test_stream_gives_torchs_uniforms_in_order_and_a_seed_repeats_them():
    s = Stream().manual_seed(11)
    got = [uniform(s) for _ in range(Stream.BLOCK + 44)]
    plain = torch.Generator().manual_seed(11)
    want = torch.rand(Stream.BLOCK, generator=plain, dtype=torch.float64).tolist()
    want += torch.rand(Stream.BLOCK, generator=plain, dtype=torch.float64).tolist()[:44]
    assert got == want
    assert len(set(got)) == len(got)
    s.manual_seed(11)  # reseeding empties the buffer: the same stream again
    assert [uniform(s) for _ in range(10)] == want[:10]
    s.set_state(torch.Generator().manual_seed(11).get_state())
    assert [uniform(s) for _ in range(10)] == want[:10]
    # a Stream is a torch.Generator: torch's own samplers take it
    assert (
        torch.rand(3, generator=Stream().manual_seed(5)).tolist()
        == torch.rand(3, generator=torch.Generator().manual_seed(5)).tolist()
    )
