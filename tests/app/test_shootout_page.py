"""The shoot-out page in AppTest: it runs the shoot-out and keeps the result."""

import pytest
from conftest import open_page, shown

from specviz.drafters import drafter_names

DRAFTERS = drafter_names()

TREE_DRAFTERS = drafter_names(tree=True)


@pytest.mark.slow  # a shoot-out over every drafter on the page (~9 s)
def test_page_runs_the_shootout_and_keeps_it():
    at = open_page("pages/shootout.py", {"max_new_tokens": "12", "k": "2"})
    assert at.button(key="shootout_run")
    at.sidebar.number_input(key="ctl_max_new_tokens").set_value(12).run()
    at.toggle(key="shootout_full").set_value(True).run()
    at.button(key="shootout_run").click().run()
    assert not at.exception, at.exception
    table, cost = at.dataframe[0].value, at.dataframe[1].value  # how fast; where the time went
    assert list(table["drafter"]) == list(DRAFTERS) and set(table["K"]) == {2}
    assert list(cost["drafter"]) == list(DRAFTERS) and "draft cost c" in cost.columns
    n_charts = len(at.get("plotly_chart"))
    at.run()  # a rerun shows the kept result without measuring again
    assert len(at.get("plotly_chart")) == n_charts == 8  # the draft cost against K among them
    rules = at.dataframe[2].value  # both tau per chain drafter
    assert "τ token-wise (measured)" in rules.columns and "τ block (same drafts)" in rules.columns
    assert list(rules["drafter"]) == [d for d in DRAFTERS[1:] if d not in TREE_DRAFTERS]
    trees = at.dataframe[3].value  # both tau per tree drafter
    assert "τ traversal (same drafts)" in trees.columns and list(trees["drafter"]) == list(TREE_DRAFTERS)
    at.sidebar.text_area(key="ctl_prompt").set_value("<x>").run()  # bad input: a message, the result stays
    assert "'<'" in shown(at.error[0].value) and at.button(key="shootout_run").disabled
    assert any("The shoot-out shown uses the previous prompt" in w.value for w in at.warning)
    assert len(at.get("plotly_chart")) == n_charts and at.query_params["max_new_tokens"] in ("12", ["12"])


@pytest.mark.slow  # the quick run over every drafter (~5 s at 12 characters)
def test_quick_run_says_what_it_measured():
    at = open_page("pages/shootout.py", {"max_new_tokens": "12", "k": "2"})
    at.button(key="shootout_run").click().run()
    assert not at.exception, at.exception
    # no rule tables: the results (speed, cost) and the "Every K" ones
    assert set(at.dataframe[0].value["K"]) == {2} and len(at.dataframe) == 4
    said = " ".join(shown(c.value) for c in at.caption)
    assert (
        "Measured just now on this machine: " in said and "the quick run: every drafter at K = 2, 12 characters" in said
    )
    assert "median of 3 interleaved runs" in said and "From run to run" in said


@pytest.mark.slow  # the quick run over every drafter, at the stored run's K = 4
def test_quick_run_against_the_stored_run():
    """At the stored run's K and temperature the page compares each drafter with the atlas's stored figure:
    the count that agree within both spreads is the count whose ranges overlap, and the others are named."""
    import re

    from specviz.teaching.agreement import agree, bench_figure, row_figure
    from ui.common import stored_bench

    at = open_page("pages/shootout.py", {"max_new_tokens": "12", "k": "4", "temperature": "0"})
    at.button(key="shootout_run").click().run()
    assert not at.exception, at.exception
    said = " ".join(shown(c.value) for c in at.caption)
    found = re.search(r"Against the atlas's stored run at the same K and temperature: (\d+) of (\d+) drafters", said)
    assert found, said
    result = next(iter(at.session_state["shootout"].values()))
    pairs = [(row_figure(r, "here"), bench_figure(stored_bench(), r["drafter"], 0.0, 4, False, "stored"))
             for r in result.rows if r["k"] == 4 and r["drafter"] != "none"]  # fmt: skip
    pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
    assert (int(found[1]), int(found[2])) == (sum(agree(a, b) for a, b in pairs), len(pairs)) and pairs
