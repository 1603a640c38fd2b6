"""Traversal verification, one idea in one file over 300 lines: the rule against the maths.

Traversal verification against the maths: the exact output distribution, enumerated over every
draft of small synthetic trees (chains, deterministic trees, trees sampled with and without
replacement) and every outcome of the verifier, in float64; optimality on a chain; the wrong
variant found biased, exactly and by the exactness lab."""

import itertools
from dataclasses import replace

import pytest
import torch

from specviz.core.engine import Generation
from specviz.core.settings import Settings
from specviz.drafters.base import Draft, chain
from specviz.teaching.exactness import ALPHA, run_exactness, verdict
from specviz.verifiers import VERIFIERS, Traversal, expected_accepted
from specviz.verifiers.traversal import accepted_depths, expected_both, tokenwise_expected, traversal_plan

V = 4


def model(seed: int, sharp: float = 1.5):
    """prefix (tuple) -> a fixed random distribution over V tokens, float64."""
    rows = {}

    def dist(prefix: tuple) -> torch.Tensor:
        if prefix not in rows:
            g = torch.Generator().manual_seed(seed * 100_003 + hash(prefix) % 100_000)
            rows[prefix] = torch.softmax(sharp * torch.randn(V, generator=g, dtype=torch.float64), -1)
        return rows[prefix]

    return dist


def sampled_drafts(shape: list[int], q_of, sampling: str | None):
    """Every draft of a tree whose nodes at depth d have shape[d] children drawn from q_of(prefix),
    with or without replacement, depth first, with its probability. -> [(Draft, weight)]"""

    def grow(prefix: tuple, depth: int):  # -> [(tokens, relative parents, q rows, weight)] of the subtree
        if depth == len(shape):
            return [([], [], [], 1.0)]
        q = q_of(prefix)
        out = []
        for xs in itertools.product(range(V), repeat=shape[depth]):
            if sampling == "without-replacement" and len(set(xs)) < len(xs):
                continue
            weight, left = 1.0, q.clone()
            for x in xs:
                weight *= float(left[x]) / float(left.sum())
                if sampling == "without-replacement":
                    left[x] = 0.0
            subs = [grow(prefix + (x,), depth + 1) for x in xs]
            for combo in itertools.product(*subs):
                tokens, parents, qs, w = [], [], [], weight
                for x, (st, sp, sq, sw) in zip(xs, combo, strict=True):
                    at = len(tokens)
                    tokens += [x, *st]
                    parents += [-1, *[at if p == -1 else at + 1 + p for p in sp]]
                    qs += [q, *sq]
                    w *= sw
                out.append((tokens, parents, qs, w))
        return out

    return [(Draft(t, p, torch.stack(q), sampling=sampling if max(shape) > 1 else None), w)
            for t, p, q, w in grow((), 0)]  # fmt: skip


def path_of(draft: Draft, node: int) -> tuple:
    out = []
    while node >= 0:
        out.append(draft.tokens[node])
        node = draft.parents[node]
    return tuple(out[::-1])


def p_rows_for(draft: Draft, p_of) -> torch.Tensor:
    return torch.stack([p_of(())] + [p_of(path_of(draft, i)) for i in range(len(draft.tokens))])  # (N+1, V)


def emitted_distribution(drafts, p_of, n: int, rule: str = "traversal") -> dict[tuple, float]:
    """Exact distribution of the first n emitted tokens (continued from the target where a round
    emits fewer), over every draft and every outcome of the traversal plan."""
    out: dict[tuple, float] = {}

    def add(prefix: tuple, last: torch.Tensor, w: float) -> None:
        for y in range(V):
            seq = prefix + (y,)
            if len(seq) == n:
                out[seq] = out.get(seq, 0.0) + w * float(last[y])
            else:
                add(seq, p_of(seq), w * float(last[y]))

    for draft, weight in drafts:
        tries = traversal_plan(draft, p_rows_for(draft, p_of), VERIFIERS[rule].token_residual)
        for (w, _), t in zip(accepted_depths(draft, tries), tries, strict=True):
            path = () if t.node < 0 else path_of(draft, t.node)
            if len(path) >= n:
                out[path[:n]] = out.get(path[:n], 0.0) + weight * w
            else:
                add(path, t.p, weight * w)
    return out


def target_distribution(p_of, n: int) -> dict[tuple, float]:
    return emitted_distribution([(chain([]), 1.0)], p_of, n)  # an empty draft emits from the target


def tv(a: dict, b: dict) -> float:
    return 0.5 * sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in a.keys() | b.keys())


SHAPES = [  # (children per node at each depth, how siblings are drawn, model seed)
    ([1, 1, 1], None, 0),  # a sampled chain, K = 3
    ([1, 1, 1], None, 1),
    ([1, 2], "with-replacement", 0),
    ([2, 1], "with-replacement", 1),
    ([2, 2], "without-replacement", 0),
    ([3, 1], "without-replacement", 1),
]


@pytest.mark.parametrize("shape, sampling, seed", SHAPES)
def test_sampled_trees_emit_the_target_distribution_exactly(shape, sampling, seed):
    p_of, q_of = model(seed), model(50 + seed, sharp=0.7)
    drafts = sampled_drafts(shape, q_of, sampling)
    assert sum(w for _, w in drafts) == pytest.approx(1.0, abs=1e-12)
    n = len(shape) + 1  # every draft depth and the bonus after it
    got, want = emitted_distribution(drafts, p_of, n), target_distribution(p_of, n)
    assert sum(got.values()) == pytest.approx(1.0, abs=1e-12)
    assert tv(got, want) < 1e-12
    wrong = emitted_distribution(drafts, p_of, n, "traversal-token-residual")
    assert tv(wrong, want) > 0.05  # (c) exactly: the wrong variant is far off on every shape here


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_deterministic_tree_emits_the_target_distribution_exactly(seed):
    """A trie-like tree, one-hot q: root -> a (-> b, -> c), root -> b (-> a -> a)."""
    p_of = model(seed, sharp=2.0)
    draft = Draft([0, 1, 2, 1, 0, 0], [-1, 0, 0, -1, 3, 4])
    got, want = emitted_distribution([(draft, 1.0)], p_of, 4), target_distribution(p_of, 4)
    assert tv(got, want) < 1e-12
    wrong = emitted_distribution([(draft, 1.0)], p_of, 4, "traversal-token-residual")
    assert tv(wrong, want) > 0.01  # its weight is not lowered after a rejection: wrong on one-hot drafts too
    # One-hot drafts: token-wise already keeps the longest drafted prefix of a target sample, the
    # most any lossless rule can keep, so traversal keeps exactly as much on average.
    both = expected_both(draft, p_rows_for(draft, p_of))
    assert both["traversal"] == pytest.approx(both["lossless"], abs=1e-12) and both["lossless"] > 0.1


def test_a_deep_path_with_a_recovering_ratio_is_kept():
    """Token-wise stops at the first token with p < q; traversal tries the whole path first, so a
    second token with p > q makes up for it: the path's ratio is (1/2)(2) = 1, accepted for sure."""
    P1, P2 = torch.tensor([0.25, 0.75, 0.0], dtype=torch.float64), torch.tensor([0.9, 0.1, 0.0], dtype=torch.float64)
    Q = torch.tensor([0.5, 0.05, 0.45], dtype=torch.float64)  # q(a) = 2 p(a); later q(a) = p(a) / 1.8
    draft = chain([0, 0], torch.stack([Q, torch.tensor([0.5, 0.5, 0.0], dtype=torch.float64)]))
    p_rows = torch.stack([P1, P2, P1])
    tries = traversal_plan(draft, p_rows)
    assert [t.node for t in tries] == [1, 0, -1] and tries[0].alpha == pytest.approx(min(1, 0.5 * 0.9 / 0.5))
    assert tokenwise_expected(draft, p_rows) == pytest.approx(0.5 * (1 + 1))  # a with 1/2, then b surely
    assert expected_both(draft, p_rows)["traversal"] == pytest.approx(2 * 0.9 + 0.1 * 1 * tries[1].alpha)


def all_chains(K: int, q_of):
    return sampled_drafts([1] * K, q_of, None)


@pytest.mark.parametrize("seed", range(4))
def test_on_a_chain_traversal_is_block_verification_and_never_fewer_on_average(seed):
    """(b) Exact, no draws: per draft, traversal's expected accepted length is block verification's
    (Sun et al.'s optimal rule); averaged over every chain X ~ q it is at least token-wise's."""
    p_of, q_of = model(seed), model(200 + seed, sharp=0.8)
    total = {"lossless": 0.0, "traversal": 0.0}
    for draft, w in all_chains(3, q_of):
        p_rows = p_rows_for(draft, p_of)
        both = expected_both(draft, p_rows)
        assert both["traversal"] == pytest.approx(expected_accepted(draft, p_rows)["block"], abs=1e-12)
        assert both["lossless"] == pytest.approx(expected_accepted(draft, p_rows)["lossless"], abs=1e-12)
        for rule in total:
            total[rule] += w * both[rule]
    assert total["traversal"] >= total["lossless"] - 1e-12
    assert total["traversal"] > total["lossless"] + 1e-3  # strictly, for these models


def test_paper_example_ten_ninths_against_eleven_ninths():
    """Sun et al.'s binary example, K = 2: token-wise 10/9 accepted per round on average, the
    optimal rule 11/9; traversal reaches it, though on the draft "a a" alone it accepts less."""
    P = torch.tensor([1 / 3, 2 / 3], dtype=torch.float64)
    Q = torch.tensor([2 / 3, 1 / 3], dtype=torch.float64)
    total = {"lossless": 0.0, "traversal": 0.0}
    for X in itertools.product(range(2), repeat=2):
        draft = chain(list(X), torch.stack([Q, Q]))
        both = expected_both(draft, torch.stack([P, P, P]))
        for rule in total:
            total[rule] += float(Q[X[0]] * Q[X[1]]) * both[rule]
    assert total["lossless"] == pytest.approx(10 / 9, abs=1e-12) and total["traversal"] == pytest.approx(11 / 9)
    both = expected_both(chain([0, 0], torch.stack([Q, Q])), torch.stack([P, P, P]))
    assert both["lossless"] == pytest.approx(0.75) and both["traversal"] == pytest.approx(0.5)


def test_notes_record_every_try_in_order():
    p_of, q_of = model(3), model(4, sharp=0.5)
    draft, _ = sampled_drafts([2, 2], q_of, "without-replacement")[17]
    p_rows = p_rows_for(draft, p_of)
    verdict_ = Traversal().verify(draft, p_rows, 1.0, torch.Generator().manual_seed(0))
    tries = verdict_.notes["tries"]
    plan = traversal_plan(draft, p_rows)
    assert [t["node"] for t in tries] == [t.node for t in plan[: len(tries)]]
    assert all(not t["accepted"] for t in tries[:-1]) and tries[-1]["accepted"] and tries[-1]["next"] == "emit"
    assert all(t["next"] == u["node"] for t, u in zip(tries, tries[1:], strict=False))
    assert all(t["u"] is None or 0 <= t["u"] < 1 for t in tries)
    accepted = tries[-1]["node"]
    assert {c.node for c in verdict_.checks if c.accepted} == set(verdict_.path)  # every kept node has its record
    assert verdict_.path == sorted(_ancestors(draft, accepted))  # depth first: an ancestor comes earlier


def _ancestors(draft: Draft, node: int) -> set[int]:
    out = set()
    while node >= 0:
        out.add(node)
        node = draft.parents[node]
    return out


def test_wrong_variant_is_listed_as_lossy():
    assert VERIFIERS["traversal"].lossless and VERIFIERS["traversal"].trees
    wrong = VERIFIERS["traversal-token-residual"]
    assert not wrong.lossless and "biased" in wrong.summary and "lossy" in wrong.summary


def test_traversal_runs_on_every_tree_drafter_settings():
    from specviz.drafters import drafter_names

    TREE_DRAFTERS = drafter_names(tree=True)

    for d in TREE_DRAFTERS:
        Settings(drafter=d, verification="traversal").check()
        Settings(drafter=d, verification="traversal-token-residual").check()


@pytest.mark.slow  # 2,000 speculative runs and their chi-square tests (~3 s)
def test_exactness_lab_calls_the_wrong_variant_biased(tiny):
    """(c) The trigram drafter against the tiny model at T = 0.7, K = 4: sampled chains whose ratio
    often falls below 1 at depth 1, where the wrong variant keeps a prefix too often."""
    prompt = tiny.tokenizer.encode("ROMEO:")
    settings = Settings(drafter="trigram", k=4, temperature=0.7, seed=9000, verification="traversal-token-residual")
    biased = run_exactness(tiny, prompt, settings, samples=1000)
    assert biased.p_value < ALPHA and verdict(biased, ALPHA)[0] == "biased", biased.p_value
    exact = run_exactness(tiny, prompt, replace(settings, verification="traversal"), samples=1000)
    assert exact.p_value >= ALPHA and verdict(exact, ALPHA)[0] == "exact", exact.p_value


def test_traversal_greedy_generation_uses_no_draws(tiny):
    prompt = tiny.tokenizer.encode("ROMEO:")
    g = Generation(
        tiny, prompt, Settings(drafter="trie", k=4, temperature=0, max_new_tokens=40, verification="traversal")
    )
    g.run()
    assert all(t["u"] is None for r in g.trace.rounds for t in r.verify_notes["tries"])


def test_charts_read_every_try_from_the_record(tiny):
    """A sampled tree (the tiny model drafting for itself, siblings without replacement): the table
    has one row per try, the chart validates, and the checks table labels α as what it is."""
    import plotly.graph_objects as go

    from specviz.charts import checks_frame
    from specviz.charts import traversal as charts
    from specviz.charts.verdict import checks_view

    prompt = tiny.tokenizer.encode("ROMEO:")
    settings = Settings(drafter="neural-tree", k=3, temperature=1.0, max_new_tokens=30, verification="traversal")
    g = Generation(tiny, prompt, settings, tiny.model)
    for _ in range(4):
        r = g.step()
        notes = r.verify_notes
        frame = charts.traversal_frame(r, tiny.tokenizer.chars)
        assert list(frame.columns) == charts.COLUMNS and len(frame) == len(notes["tries"])
        assert list(frame["result"]).count("accepted") == 1 and frame["next"].iloc[-1] == "emit"
        assert frame["node"].iloc[0] != "root" or not r.draft_tokens  # a leaf is tried first
        assert list(checks_frame(r, tiny.tokenizer.chars).columns) == charts.CHECK_COLUMNS
        view = checks_view(r)  # beside the text at 1024 px: ~300 px
        assert sum(view[c]["width"] for c in charts.CHECK_COLUMNS) <= 300
        fig = charts.traversal_figure(r, tiny.tokenizer.chars)
        go.Figure(fig.to_dict())  # plotly validates every property here
        assert f"{notes['expected_accepted']['traversal']:.2f} traversal" in fig.layout.title.text
        assert charts.both_rules(r)["kept"] == r.n_accepted


def test_panel_draws_nothing_for_other_verifiers(tiny, monkeypatch):
    import streamlit as st

    from ui.method_views import PANELS
    from ui.traversal_view import traversal_view

    assert PANELS["traversal tries"] is traversal_view
    prompt = tiny.tokenizer.encode("ROMEO:")
    r = Generation(tiny, prompt, Settings(drafter="trie", temperature=1.0, max_new_tokens=10)).step()

    def fail(*args, **kwargs):
        raise AssertionError("the traversal panel drew for a token-wise round")

    for name in ("markdown", "caption", "dataframe", "plotly_chart"):
        monkeypatch.setattr(st, name, fail)
    traversal_view(r, tiny.tokenizer.chars)
