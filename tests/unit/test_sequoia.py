"""Sequoia's tree shapes (specviz/adaptive/sequoia.py): the dynamic programme against every tree for
small budgets, a fixed shape grown from a drafter's ranked children, the walk's chances for sampled
siblings against exact enumeration, greedy equality and the shape used for every drafter with the
trait ``shaped`` (from the registry), and the rates kept on disk (the KV cache after every round:
tests/unit/test_engine.py; exactness on the real target: tests/statistical/test_sequoia_real_target.py)."""

import random
from functools import cache

import pytest
import torch
from conftest import GREEDY_TEXT, GREEDY_TOKENS

from specviz.adaptive import sequoia
from specviz.adaptive.sequoia import Rates, expected_accepted, grow_shape, optimal_tree, rank_paths
from specviz.core.engine import Generation
from specviz.core.sampling import Stream
from specviz.core.settings import Settings
from specviz.core.target import room
from specviz.drafters import drafter_names

SHAPED = drafter_names(shaped=True)


def every_tree(budget: int, depth: int, ranks: int) -> list[tuple[tuple[int, ...], ...]]:
    """Every tree of at most ``budget`` nodes, ``depth`` levels and ``ranks`` children a node, each
    node's children being ranks 0, 1, ..., j - 1: by brute force, a forest at a time."""

    @cache
    def forests(d: int, m: int, first: int) -> list[tuple[tuple[int, ...], ...]]:
        # forests of exactly m nodes hanging below a node at depth d, ranks first, first + 1, ...
        if m == 0:
            return [()]
        if d == depth or first == ranks:
            return []
        out = []
        for s in range(1, m + 1):  # the rank-`first` child takes s nodes
            for below in forests(d + 1, s - 1, 0):
                for rest in forests(d, m - s, first + 1):
                    out.append(((first,), *((first, *p) for p in below), *rest))
        return out

    return [t for m in range(budget + 1) for t in forests(0, m, 0)]


def random_rates(rng: random.Random, depth: int, ranks: int) -> Rates:
    rows = []
    for _ in range(depth):
        w = sorted((rng.random() for _ in range(ranks)), reverse=True)
        scale = rng.uniform(0.3, 0.95) / sum(w)  # the children's chances sum to below 1
        rows.append(tuple(x * scale for x in w))
    return Rates(tuple(rows), (100,) * depth)


def test_brute_force_counts_trees():
    assert len(every_tree(2, 2, 2)) == 4  # (), a, a+b, a+a.a
    assert len(every_tree(3, 1, 3)) == 4  # 0, 1, 2 or 3 children of the root


@pytest.mark.parametrize("seed", range(6))
def test_programme_equals_brute_force_over_every_tree(seed):
    rng = random.Random(seed)
    for budget, depth, ranks in ((4, 2, 3), (6, 3, 3), (7, 4, 2), (5, 5, 4)):
        rates = random_rates(rng, depth, ranks)
        trees = every_tree(budget, depth, ranks)
        best = max(expected_accepted(t, rates) for t in trees)
        shape = optimal_tree(rates, budget, depth, ranks)
        assert len(shape) <= budget and all(len(p) <= depth and max(p) < ranks for p in shape)
        assert set(shape) in [set(t) for t in trees]  # a tree: parents and lower-ranked siblings present
        assert expected_accepted(shape, rates) == pytest.approx(best, rel=1e-12)


def test_a_confident_first_rank_makes_a_chain_and_a_flat_one_a_bush():
    sure = Rates(((0.8, 0.1),) * 3, (100,) * 3)
    assert optimal_tree(sure, 3, 3, 2) == ((0,), (0, 0), (0, 0, 0))  # 0.8 + 0.64 + 0.512 beats any branch
    flat = Rates(((0.3, 0.3, 0.3),) * 3, (100,) * 3)
    assert sorted(optimal_tree(flat, 3, 3, 3)) == [(0,), (1,), (2,)]  # 0.9 beats 0.3 + 0.09 + ...
    assert optimal_tree(sure, 5, 0, 2) == ()  # no depth, no tree


def test_a_depth_measured_too_seldom_takes_the_rates_above():
    rates = Rates(((0.5, 0.2), (0.9, 0.05), (0.1, 0.1)), (100, 100, sequoia.MIN_REACHED - 1))
    assert rates.at(2, 0) == 0.9 and rates.at(3, 0) == 0.9 and rates.at(7, 1) == 0.05 and rates.at(1, 4) == 0.0


def test_grow_shape_follows_ranks_and_drops_what_a_node_cannot_have():
    kids = {"": "ab", "a": "cd", "b": "e", "ac": "f"}

    def children(seq):  # a node's ranked children: tokens are characters, the state its sequence
        return [(c, 1.0, seq + c) for c in kids.get(seq, "")]

    shape = ((0,), (1,), (0, 0), (0, 1), (1, 0), (1, 1), (1, 1, 0), (0, 0, 0))  # (1, 1): b has one child
    tokens, parents, nodes = grow_shape(children, "", shape)
    assert tokens == ["a", "c", "f", "d", "b", "e"] and parents == [-1, 0, 1, 0, -1, 4]
    assert [d for d, _, _ in nodes] == [1, 2, 3, 2, 1, 2] and nodes[2][2] == "acf"


def test_rates_are_measured_once_and_kept(tmp_path):
    calls = []

    def measure_now():
        calls.append(1)
        return Rates(((0.7, 0.2),), (50,), "measured")

    key = {"weights": "abc", "temperature": 0.5}
    sequoia._KEPT.clear()
    first = sequoia.kept_rates(key, measure_now, tmp_path)
    sequoia._KEPT.clear()  # a new process: read from the file
    again = sequoia.kept_rates(key, measure_now, tmp_path)
    assert calls == [1] and again.accept == first.accept and again.reached == (50,) and "kept" in again.source
    sequoia._KEPT.clear()
    sequoia.kept_rates({**key, "temperature": 1.0}, measure_now, tmp_path)  # another key: measured afresh
    assert calls == [1, 1]


def test_every_static_tree_drafter_is_shaped():
    """The tree drafters with a static shape take Sequoia's; those grown by design stay dynamic."""
    assert {"distilled-tree", "medusa", "neural-tree"} <= set(SHAPED) <= set(drafter_names(tree=True))


@pytest.mark.parametrize("drafter", SHAPED)
def test_sequoia_shaped_tree_equals_plain_greedy_and_uses_the_optimal_shape(target64, tiny64, greedy, drafter):
    """Greedy equality at K = 1, 4, 8, 300 tokens past block_size; every round's tree is Sequoia's shape
    for the node budget and that round's depth, optimal_tree(rates, budget, K), less only the nodes whose
    parent had fewer ranked children (and then a subset of it)."""
    prompt = target64.tokenizer.encode(GREEDY_TEXT)
    for k in (1, 4, 8):
        s = Settings(drafter=drafter, tree_shape="sequoia", k=k, temperature=0, max_new_tokens=GREEDY_TOKENS)
        gen = Generation(target64, prompt, s, tiny64.model)
        run = gen.run()
        assert run.tokens == greedy.tokens, f"Sequoia-shaped {drafter}, K={k}, diverged from greedy"
        assert run.summary()["accepted"] > 0 and sum(r.reprefill for r in run.rounds) >= 1
        rates, budget = gen.drafter.rates, gen.drafter.nodes
        assert rates is not None and len(rates.accept) <= k
        drafted = [r for r in run.rounds if r.draft_tokens]
        whole = 0
        for r in drafted:
            assert r.draft_notes["shape"] == "sequoia"
            limit = min(
                k, GREEDY_TOKENS - (r.context_len - len(prompt)) - 1, room(r.context_len, target64.config.block_size)
            )
            want = set(optimal_tree(rates, budget, min(limit, len(rates.accept))))
            got = rank_paths(r.draft_parents)
            assert len(set(got)) == len(got) and set(got) <= want, (drafter, k, r.index)
            whole += set(got) == want
        assert whole >= len(drafted) // 2, f"{drafter} K={k}: the full shape in {whole} of {len(drafted)} rounds"


def exact_rank_chances(p: list[float], q: list[float], ranks: int) -> list[float]:
    """Per rank, the chance that the r-th child drawn from q without replacement is the one the verifier
    keeps: every sequence of draws enumerated, each tried against the residual p left by the rejections
    before it (p <- norm(max(p - q, 0)), q <- q less the rejected token)."""
    out = [0.0] * ranks

    def walk(r: int, pr: list[float], qr: list[float], weight: float) -> None:
        # weight: the chance of the draws so far and of every one of them being rejected
        if r == ranks:
            return
        for x, qx in enumerate(qr):
            if qx == 0:
                continue
            alpha = min(1.0, pr[x] / qx)
            out[r] += weight * qx * alpha
            resid = [max(a - b, 0.0) for a, b in zip(pr, qr, strict=True)]
            total, rest = sum(resid), 1 - qx
            if total > 0 and rest > 0:
                walk(r + 1, [a / total for a in resid], [0.0 if i == x else b / rest for i, b in enumerate(qr)],
                     weight * qx * (1 - alpha))  # fmt: skip

    walk(0, list(p), list(q), 1.0)
    return out


def test_sampled_children_chances_and_tokens_match_enumeration():
    """The walk's per-rank chances for siblings drawn without replacement average to the exact chances by
    enumeration, and the token the node emits is a draw from the target's p (the verifier is lossless)."""
    p = torch.tensor([0.5, 0.25, 0.15, 0.1], dtype=torch.float64)
    q = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64)
    want = exact_rank_chances(p.tolist(), q.tolist(), 3)
    gen, n = Stream().manual_seed(3), 20_000
    sums, counts, went = [0.0] * 3, [0] * 4, 0
    for _ in range(n):
        gains, y, kept = sequoia.sampled_children(p, q, 3, "without-replacement", gen)
        for r, g in enumerate(gains):
            sums[r] += g
        counts[y] += 1
        went += kept
    assert [s / n for s in sums] == pytest.approx(want, abs=0.01)
    assert went / n == pytest.approx(sum(want), abs=0.015)  # a child kept as often as the chances say
    se = [(float(pi) * (1 - float(pi)) / n) ** 0.5 for pi in p]
    assert all(abs(c / n - float(pi)) < 4 * e for c, pi, e in zip(counts, p, se, strict=True)), counts
    assert sum(want) < 1 and want[0] == pytest.approx(float(torch.minimum(p, q).sum()))


def test_measured_rates_follow_the_walk(target):
    """The walk's rates are averages of probabilities, one row per depth, each depth reached no more
    often than the one above it; at T = 0 the first rank (the table's mode of the target's argmax)
    is accepted far more often than the others."""
    from models.distilled import load_table
    from specviz.drafters.distilled import DistilledTreeDrafter

    drafter = DistilledTreeDrafter(load_table(target.path))
    prompts = [target.tokenizer.encode("ROMEO:\nBut soft, what light through yonder window breaks?\n")]
    rates = sequoia.measure(target.model, lambda seq, d: drafter.table.ranked(drafter.lookup(seq)[0]), prompts, 0.0,
                            depth=3, new_tokens=120)  # fmt: skip
    assert len(rates.accept) == 3 and 0 < sum(rates.reached) <= 120
    assert rates.reached[0] >= rates.reached[1] >= rates.reached[2] > 0
    assert all(0 <= sum(row) <= 1 + 1e-9 for row in rates.accept)
    assert rates.accept[0][0] > 0.5 > max(rates.accept[0][1:])
