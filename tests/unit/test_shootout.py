"""The shoot-out: one run gives a row per (drafter, K) and its figures hold those rows; the page
runs it with a progress bar and keeps the result (tests/app/test_shootout_page.py)."""

import pytest

from models.checkpoint import load_checkpoint
from specviz.bench.shootout import modelled_speedup, rules_row, run_shootout
from specviz.charts import shootout as charts
from specviz.core.engine import Generation
from specviz.core.settings import Settings
from specviz.drafters import drafter_names
from specviz.teaching.stats import expected_tokens_per_round

DRAFTERS = drafter_names()
TREE_DRAFTERS = drafter_names(tree=True)


@pytest.fixture(scope="module")
def result():
    target, tiny = load_checkpoint("target"), load_checkpoint("tiny")
    seen = []
    settings = Settings(k=3, temperature=0.0, max_new_tokens=24)
    out = run_shootout(target, tiny, "the cat sat on the mat.\nthe cat sat on the", settings, ks=(1, 2),
                       repeats=1, progress=lambda d, t: seen.append((d, t)))  # fmt: skip
    return out, seen


@pytest.mark.slow  # the result fixture: a shoot-out over every drafter (~5 s)
def test_a_row_per_drafter_and_k(result):
    out, seen = result
    assert sorted({(r["drafter"], r["k"]) for r in out.rows}) == sorted((d, k) for d in DRAFTERS for k in (1, 2, 3))
    assert [d for d, _ in seen] == list(range(1, len(seen) + 1)) and seen[-1][0] == seen[-1][1]
    # what a drafter holds does not depend on K: measured once, the same in every row of the drafter
    mb = {(r["drafter"], r["k"]): r["memory_mb"] for r in out.rows}
    assert all(mb[d, k] == mb[d, 1] for d, k in mb) and mb["distilled", 1] > 50 > 0.01 > mb["none", 1]
    for r in out.rows:
        assert r["tokens"] == 24 and r["temperature"] == 0.0
        assert r["same_as_baseline"] is True  # greedy: every drafter gives the baseline's tokens
        if r["drafter"] == "none":
            assert r["tokens_per_forward"] == 1.0 and r["speedup"] == 1.0
    assert set(out.by_position) == set(DRAFTERS[1:])
    # tau with each rule, per chain drafter; greedy, so the same drafts give the same tokens under both
    assert [r["drafter"] for r in out.rules] == [d for d in DRAFTERS[1:] if d not in TREE_DRAFTERS]
    for r in out.rules:
        assert 1 <= r["tau_lossless"] <= 4 and r["tau_block"] == pytest.approx(r["tau_lossless"])
        assert r["tau_same_block"] == pytest.approx(r["tau_same_lossless"])  # at T = 0 both rules keep the match
    # and per tree drafter, token-wise and traversal: at T = 0 both keep the longest greedy match
    assert [r["drafter"] for r in out.tree_rules] == list(TREE_DRAFTERS)
    for r in out.tree_rules:
        assert 1 <= r["tau_lossless"] <= 4 and r["tau_traversal"] == pytest.approx(r["tau_lossless"])
        assert r["tau_same_traversal"] == pytest.approx(r["tau_same_lossless"])


@pytest.mark.slow  # the result fixture: a shoot-out over every drafter (~5 s)
def test_figures_hold_the_rows(result):
    out, _ = result
    at_k = [r for r in out.rows if r["k"] == 3]
    fig = charts.speedup_bars(at_k, "t")
    assert list(fig.data[1].x) == [r["speedup"] for r in at_k] and list(fig.data[1].y) == list(DRAFTERS)  # sideways
    exp = charts.expected_vs_measured(at_k)
    drafted = [r for r in at_k if r["acceptance_rate"] is not None]
    assert list(exp.data[1].x) == [expected_tokens_per_round(r["acceptance_rate"], 3) for r in drafted]
    sweep = charts.k_sweep(out.rows)
    trigram = next(t for t in sweep.data if t.name == "trigram")
    assert list(trigram.x) == [1, 2, 3]
    model = charts.model_vs_measured(at_k)
    assert all(y == pytest.approx(modelled_speedup(r)) for y, r in zip(model.data[1].x, drafted, strict=True))
    assert len(charts.results_frame(out.rows)) == len(out.rows)
    rules = charts.rules_frame(out.rules)
    assert list(rules["τ block (same drafts)"]) == [r["tau_same_block"] for r in out.rules]
    bars = charts.rules_bars(out.rules, 3)
    assert [t.name for t in bars.data] == ["τ token-wise (measured)", "τ token-wise (same drafts)",
                                           "τ block (measured)", "τ block (same drafts)"]  # fmt: skip
    assert list(bars.data[3].x) == [r["tau_same_block"] for r in out.rules]
    trees = charts.rules_bars(out.tree_rules, 3, "traversal")
    assert [t.name for t in trees.data] == ["τ token-wise (measured)", "τ token-wise (same drafts)",
                                            "τ traversal (measured)", "τ traversal (same drafts)"]  # fmt: skip
    assert list(charts.rules_frame(out.tree_rules, "traversal")["τ traversal (measured)"]) == [
        r["tau_traversal"] for r in out.tree_rules
    ]


def test_rules_row_on_sampled_drafts(target):
    """tau of each run, and both rules' expectations read off the block run's own rounds."""
    ids = target.tokenizer.encode("ROMEO:\n")
    run = {rule: Generation(target, ids, Settings(k=4, temperature=1.0, max_new_tokens=60, verification=rule)).run()
           for rule in ("lossless", "block")}  # fmt: skip
    row = rules_row("trigram", run["lossless"], run["block"], "block")
    assert row["tau_lossless"] == len(run["lossless"].tokens) / len(run["lossless"].rounds)
    notes = [r.verify_notes["expected_accepted"] for r in run["block"].rounds]
    assert row["tau_same_block"] == pytest.approx(1 + sum(n["block"] for n in notes) / len(notes))
    assert row["tau_same_lossless"] == pytest.approx(1 + sum(n["lossless"] for n in notes) / len(notes))
