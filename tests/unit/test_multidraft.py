"""The multi-draft maths, exactly: for a node with target p and draft q, enumerate every way its
children can be drawn (with replacement: k i.i.d. draws; without: sequential draws from q minus
the earlier ones), walk token-wise verification over the rows the verifier uses, and add up the
probability of each emitted token. The lossless verifier gives p (to 1e-12) for both samplings;
replacement-mismatch on a tree drawn without replacement does not."""

import itertools

import pytest
import torch

from specviz.core.sampling import without
from specviz.drafters.base import Draft
from specviz.verifiers import Mismatch, TokenWise, residual


def sibling_draws(q: torch.Tensor, k: int, sampling: str):
    """Every sequence of k sibling draws: (tokens, the q each was drawn from, its probability)."""
    V = q.numel()
    for tokens in itertools.product(range(V), repeat=k):
        rest, qs, prob = q, [], 1.0
        for x in tokens:
            prob *= float(rest[x])
            qs.append(rest)
            if sampling == "without-replacement":
                rest = without(rest, x)
        if prob > 0:
            yield list(tokens), torch.stack(qs), prob


def emitted_distribution(verifier, p: torch.Tensor, q: torch.Tensor, k: int, sampling: str) -> torch.Tensor:
    """The exact distribution of the token a verifier emits at a node with k sampled children. (V,)"""
    out = torch.zeros_like(p)
    for tokens, qs, prob in sibling_draws(q, k, sampling):
        draft = Draft(tokens, [-1] * k, qs, sampling=sampling)
        rows = verifier.rows(draft, p.numel())  # (k, V) the q each child is tried against
        left, reach = p, prob
        for x, row in zip(tokens, rows, strict=True):
            accept = min(1.0, float(left[x]) / float(row[x]))  # the verifier's min(1, p/q)
            out[x] += reach * accept
            reach *= 1 - accept
            left = residual(left, row)
        out += reach * left  # every child rejected: the correction
    return out


def random_pair(V: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    p, q = torch.rand(2, V, generator=gen, dtype=torch.float64).mul(3).softmax(-1)
    return p, q


@pytest.mark.parametrize("sampling", ["with-replacement", "without-replacement"])
@pytest.mark.parametrize("V, k, seed", [(3, 2, 0), (3, 3, 1), (4, 2, 2), (4, 3, 3)])
def test_lossless_verification_of_sampled_siblings_emits_p(sampling, V, k, seed):
    p, q = random_pair(V, seed)
    got = emitted_distribution(TokenWise(), p, q, k, sampling)
    assert float((got - p).abs().max()) < 1e-12


@pytest.mark.parametrize("V, k, seed", [(3, 2, 0), (4, 2, 1), (4, 3, 0)])
def test_replacement_mismatch_on_a_tree_drawn_without_replacement_is_biased(V, k, seed):
    p, q = random_pair(V, seed)
    # Bias needs a residual on two tokens or more (p > q on at least two): with one, every rule
    # that rejects down to it emits it alike. (Seed 3 has one: the mismatch is exact there.)
    assert int((p > q).sum()) >= 2
    got = emitted_distribution(Mismatch(), p, q, k, "without-replacement")
    assert float((got - p).abs().max()) > 5e-3
    assert float(got.sum()) == pytest.approx(1.0, abs=1e-12)  # a distribution, just the wrong one


def test_a_one_hot_q_leaves_no_second_sibling_without_replacement():
    q = torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64)
    assert [t for t, _, _ in sibling_draws(q, 2, "without-replacement")] == []  # the second draw has no mass
    assert float(without(q, 1).sum()) == 0.0


@pytest.mark.parametrize("verifier", [TokenWise(), Mismatch()], ids=lambda v: v.name)
@pytest.mark.parametrize("sampling", ["with-replacement", "without-replacement"])
def test_the_walk_tries_each_child_against_the_row_the_maths_above_uses(verifier, sampling):
    """verify() derives a sibling's q only when it tries it; each must be, bit for bit, the row of
    verifier.rows() that the exact enumerations above prove (or disprove) lossless."""
    V, k = 6, 4
    tried = 0
    for seed in range(40):
        p, q = random_pair(V, seed)
        g = torch.Generator().manual_seed(seed)
        tokens, qs, rest = [], [], q
        for _ in range(k):
            tokens.append(int(torch.multinomial(rest, 1, generator=g)))
            qs.append(rest)
            if sampling == "without-replacement":
                rest = without(rest, tokens[-1])
        draft = Draft(tokens, [-1] * k, torch.stack(qs), sampling=sampling)
        rows = verifier.rows(draft, V)
        verdict = verifier.verify(draft, torch.stack([p] + [q] * k), 1.0, g)
        for check in verdict.checks:
            assert torch.equal(check.q, rows[check.node])
        tried += len(verdict.checks)
    assert tried > 40 * 1.5  # later siblings were tried, not only first ones
