"""Sequoia's tree shapes (specviz/adaptive/sequoia.py): the dynamic programme against every tree for
small budgets, a fixed shape grown from a drafter's ranked children, greedy equality with a
Sequoia-shaped distilled tree, and its rates kept on disk (exactness on the real target:
tests/statistical/test_sequoia_real_target.py)."""

import random
from functools import cache

import pytest
from conftest import GREEDY_TEXT, GREEDY_TOKENS

from specviz.adaptive import sequoia
from specviz.adaptive.sequoia import Rates, expected_accepted, grow_shape, optimal_tree
from specviz.core.engine import Generation
from specviz.core.settings import Settings


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


def test_sequoia_shaped_tree_equals_plain_greedy_decoding(target64, greedy):
    prompt = target64.tokenizer.encode(GREEDY_TEXT)
    for k in (1, 4, 8):
        s = Settings(drafter="distilled-tree", tree_shape="sequoia", k=k, temperature=0,
                     max_new_tokens=GREEDY_TOKENS)  # fmt: skip
        run = Generation(target64, prompt, s).run()
        assert run.tokens == greedy.tokens, f"Sequoia-shaped distilled tree, K={k}, diverged from greedy"
        assert run.summary()["accepted"] > 0
        assert all(r.draft_notes["shape"] == "sequoia" for r in run.rounds if r.draft_tokens)


def test_measured_rates_follow_the_walk(target):
    """The walk's rates are averages of probabilities, one row per depth, each depth reached no more
    often than the one above it; at T = 0 the first rank (the table's mode of the target's argmax)
    is accepted far more often than the others."""
    from models.distilled import load_table
    from specviz.drafters.distilled import DistilledTreeDrafter

    drafter = DistilledTreeDrafter(load_table(target.path))
    prompts = [target.tokenizer.encode("ROMEO:\nBut soft, what light through yonder window breaks?\n")]
    rates = sequoia.measure(target.model, lambda seq: drafter.table.ranked(drafter.lookup(seq)[0]), prompts, 0.0,
                            depth=3, new_tokens=120)  # fmt: skip
    assert len(rates.accept) == 3 and 0 < sum(rates.reached) <= 120
    assert rates.reached[0] >= rates.reached[1] >= rates.reached[2] > 0
    assert all(0 <= sum(row) <= 1 + 1e-9 for row in rates.accept)
    assert rates.accept[0][0] > 0.5 > max(rates.accept[0][1:])
