"""Block verification against the maths: the paper's worked example, exact enumeration of the
output distribution with context-dependent models, scripted draws, and greedy agreement."""

import itertools

import pytest
import torch

import specviz.verifiers.block as block_mod
from specviz.drafters.base import Draft, chain
from specviz.verifiers import Block, TokenWise, expected_accepted
from specviz.verifiers.block import block_terms

verify_block, verify_tokenwise = Block().verify, TokenWise().verify


def rows_for(X, p_of, q_of):
    """Target rows along the draft X (K+1, V), draft rows (K, V), and the draft's probability."""
    p_rows = torch.stack([p_of(X[:i]) for i in range(len(X) + 1)])
    q_rows = torch.stack([q_of(X[:i]) for i in range(len(X))])
    weight = 1.0
    for i, x in enumerate(X):
        weight *= float(q_rows[i][x])
    return p_rows, q_rows, weight


def averaged(K, p_of, q_of, V):
    """Expected accepted drafted tokens of each rule, averaged over every draft X ~ q (exact)."""
    total = {"lossless": 0.0, "block": 0.0}
    for X in itertools.product(range(V), repeat=K):
        p_rows, q_rows, weight = rows_for(X, p_of, q_of)
        for rule, e in expected_accepted(chain(list(X), q_rows), p_rows).items():
            total[rule] += weight * e
    return total


def random_model(V: int, seed: int, sharp: float = 1.0):
    """A context-dependent distribution: prefix -> (V,), fixed per prefix, from a seeded generator."""
    cache = {}

    def dist(prefix):
        if prefix not in cache:
            g = torch.Generator().manual_seed(hash((seed, prefix)) % 2**31)
            cache[prefix] = torch.softmax(sharp * torch.randn(V, generator=g, dtype=torch.float64), -1)
        return cache[prefix]

    return dist


def test_paper_example_ten_ninths_against_eleven_ninths():
    """Sun et al.'s example: binary vocabulary, target (1/3, 2/3), draft (2/3, 1/3), K = 2.
    Token-wise verification accepts 10/9 drafted tokens per iteration on average, block 11/9."""
    P = torch.tensor([1 / 3, 2 / 3], dtype=torch.float64)
    Q = torch.tensor([2 / 3, 1 / 3], dtype=torch.float64)
    got = averaged(2, lambda prefix: P, lambda prefix: Q, 2)
    assert got["lossless"] == pytest.approx(10 / 9, abs=1e-12)
    assert got["block"] == pytest.approx(11 / 9, abs=1e-12)


def test_one_draft_can_favour_token_wise_but_the_average_never_does():
    P = torch.tensor([1 / 3, 2 / 3], dtype=torch.float64)
    Q = torch.tensor([2 / 3, 1 / 3], dtype=torch.float64)
    draft = chain([0, 0], torch.stack([Q, Q]))  # "a a": p/q = 1/2 twice
    e = expected_accepted(draft, torch.stack([P, P, P]))
    assert e["lossless"] == pytest.approx(0.75) and e["block"] == pytest.approx(0.5)
    for seed in range(4):
        p_of, q_of = random_model(3, seed), random_model(3, 100 + seed)
        got = averaged(3, p_of, q_of, 3)
        assert got["block"] >= got["lossless"] - 1e-12


def output_distribution(K, V, p_of, q_of):
    """The exact distribution of the first K + 1 emitted tokens (continued from the target where
    a round emits fewer), over every draft and every tau, from block_terms."""
    out = {}
    for X in itertools.product(range(V), repeat=K):
        p_rows, q_rows, weight = rows_for(X, p_of, q_of)
        _, stops, residuals = block_terms(chain(list(X), q_rows), p_rows)
        h = [1.0, *stops]  # h_0 = 1: tau = 0 is always possible
        for tau in range(K + 1):
            p_tau = h[tau]
            for j in range(tau + 1, K + 1):
                p_tau *= 1 - h[j]
            if p_tau == 0:
                continue
            last = p_rows[K] if tau == K else residuals[tau] / residuals[tau].sum()
            for y in range(V):
                head = (*X[:tau], y)
                for rest in itertools.product(range(V), repeat=K + 1 - len(head)):
                    seq, prob = head + rest, weight * p_tau * float(last[y])
                    for i in range(len(head), K + 1):
                        prob *= float(p_of(seq[:i])[seq[i]])
                    out[seq] = out.get(seq, 0.0) + prob
    return out


@pytest.mark.parametrize("seed, sharp", [(0, 1.0), (1, 3.0), (2, 0.3)])
def test_block_verification_is_lossless_by_exact_enumeration(seed, sharp):
    K, V = 3, 3
    p_of, q_of = random_model(V, seed, sharp), random_model(V, 50 + seed, sharp)
    got = output_distribution(K, V, p_of, q_of)
    for seq in itertools.product(range(V), repeat=K + 1):
        want = 1.0
        for i in range(K + 1):
            want *= float(p_of(seq[:i])[seq[i]])
        assert got.get(seq, 0.0) == pytest.approx(want, abs=1e-12), seq


def test_verify_keeps_the_longest_prefix_whose_draw_passes(monkeypatch):
    P = torch.tensor([1 / 3, 2 / 3], dtype=torch.float64)
    Q = torch.tensor([2 / 3, 1 / 3], dtype=torch.float64)
    draft = chain([1, 0, 0], torch.stack([Q, Q, Q]))  # "b a a"
    p_rows = torch.stack([P] * 4)
    weights, stops, residuals = block_terms(draft, p_rows)
    assert weights == pytest.approx([1.0, 0.5, 0.25])  # p/q = 2 (capped at 1), then 1/2 twice
    # h_1: w_1 = 1, so nothing is owed to a longer block: stop whenever the residual has mass;
    # h_2: 0.5 p - q <= 0 everywhere, no residual mass: never stop at 2; h_3 = w_3.
    assert stops == pytest.approx([1.0, 0.0, 0.25])
    taus = {check_scripted(monkeypatch, draft, p_rows, etas, stops, residuals)
            for etas in ([0.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.99, 0.0, 0.2])}  # fmt: skip
    assert taus == {3, 1}  # eta_3 < 1/4 keeps all three; otherwise h_2 = 0 and h_1 = 1 keep one


def check_scripted(monkeypatch, draft, p_rows, etas, stops, residuals):
    """With the draws scripted, tau is the last j whose eta_j < h_j, and the last token comes from
    residual r_tau (or the bonus row)."""
    monkeypatch.setattr(block_mod, "uniform", lambda gen, queue=list(etas): queue.pop(0))
    v = verify_block(draft, p_rows, 1.0, torch.Generator().manual_seed(0))
    tau = v.notes["tau"]
    want = max([j + 1 for j, (e, h) in enumerate(zip(etas, stops, strict=True)) if e < h], default=0)
    assert tau == want and v.path == list(range(tau))
    assert [c.accepted for c in v.checks] == [j < tau for j in range(3)]
    if tau < 3:
        assert torch.allclose(v.residual, residuals[tau] / residuals[tau].sum())
    else:
        assert v.bonus is not None and torch.equal(v.bonus_p, p_rows[3])
    return tau


def test_tau_follows_the_stop_probabilities():
    """Over many seeds, tau = j with probability h_j prod_{l > j} (1 - h_l), as the enumeration assumes."""
    p_of, q_of = random_model(4, 7), random_model(4, 8)
    X = (1, 2, 0)
    p_rows, q_rows, _ = rows_for(X, p_of, q_of)
    draft = chain(list(X), q_rows)
    _, stops, _ = block_terms(draft, p_rows)
    h = [1.0, *stops]
    want = []
    for tau in range(4):
        prob = h[tau]
        for j in range(tau + 1, 4):
            prob *= 1 - h[j]
        want.append(prob)
    n = 4000
    counts = [0] * 4
    for seed in range(n):
        counts[verify_block(draft, p_rows, 1.0, torch.Generator().manual_seed(seed)).notes["tau"]] += 1
    for c, w in zip(counts, want, strict=True):
        assert abs(c / n - w) < 4 * (w * (1 - w) / n) ** 0.5 + 1e-9  # within 4 standard errors


def test_greedy_block_is_token_wise_and_draws_nothing():
    V = 5
    p_rows = torch.nn.functional.one_hot(torch.tensor([2, 4, 1, 3, 0]), V).double()
    for X in ([2, 4, 1, 3], [2, 4, 0, 3], [1, 4, 1, 3], [2, 4, 1]):
        draft = chain(X)
        gen = torch.Generator().manual_seed(0)
        state = gen.get_state()
        b = verify_block(draft, p_rows[: len(X) + 1], 0.0, gen)
        t = verify_tokenwise(draft, p_rows[: len(X) + 1], 0.0, torch.Generator())
        assert b.path == t.path and b.emitted(draft) == t.emitted(draft)
        assert torch.equal(gen.get_state(), state)


def test_block_refuses_trees():
    with pytest.raises(ValueError, match="chains only"):
        verify_block(Draft([0, 1], [-1, -1]), torch.ones(3, 2) / 2, 1.0, torch.Generator())
