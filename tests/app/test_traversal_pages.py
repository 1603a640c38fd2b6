"""Traversal verification on the pages, in AppTest: the step page's traversal panel, and the
exactness lab's label for the lossy variant."""

from conftest import click, open_page


def test_step_page_shows_the_traversal():
    from specviz.charts import traversal as charts

    at = open_page("pages/step.py", {"drafter": "distilled-tree", "verification": "traversal", "temperature": "1.0"})
    session = at.session_state["run"]
    for _ in range(6):  # several rounds: the text view needs a record for every kept node, however deep
        click(at, "nav_next")
    assert session.current.draft_tokens and max(r.n_accepted for r in session.rounds) >= 2
    assert any("The traversal, leaves first" in m.value for m in at.markdown)
    assert any(list(d.value.columns) == charts.COLUMNS for d in at.dataframe)
    assert any("The traversal, try by try" in c.proto.spec for c in at.get("plotly_chart"))


def test_exactness_lab_labels_the_wrong_variant_lossy():
    from specviz.teaching.exactness import rule_sentence
    from specviz.verifiers import verifier_label

    assert "LOSSY" in rule_sentence("traversal-token-residual") and "expected to pass" in rule_sentence("traversal")
    assert verifier_label("traversal-token-residual").endswith("(lossy)")
    at = open_page("pages/exactness.py", {"drafter": "trigram", "verification": "traversal-token-residual"})
    options = at.sidebar.selectbox(key="ctl_verification").options
    assert "traversal" in options and "traversal-token-residual (lossy)" in options
