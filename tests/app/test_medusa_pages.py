"""Medusa on the pages, in AppTest: the step page's heads and tree, the tree page's knobs."""

from conftest import chart_specs, click, open_page


def test_step_page_shows_each_heads_top_k_and_the_tree():
    import plotly.graph_objects as go

    from specviz.charts.medusa import heads_figure

    at = open_page("pages/step.py", {"drafter": "medusa", "k": "3", "max_new_tokens": "20"})
    click(at, "nav_next")
    r = at.session_state["run"].current
    specs = chart_specs(at)
    heads = next(s for s in specs if s["layout"]["title"]["text"].startswith("Each head's top 3"))
    first = next(d for d in heads["data"] if d["name"] == "candidate 1")
    assert first["y"] == [row[0]["p"] for row in r.draft_notes["heads"]]  # head i's best, i = 1..depth
    assert any(s["layout"]["title"]["text"].startswith(f"Draft tree: {len(r.draft_tokens)} nodes") for s in specs)
    go.Figure(heads_figure(r.draft_notes, at.session_state["run"].generation.trace.vocab).to_dict())  # validates


def test_tree_page_knobs_rebuild_the_medusa_tree():
    at = open_page("pages/tree.py", {"drafter": "medusa", "k": "4"})
    at.slider(key="knob_medusa_nodes").set_value(4).run()
    assert not at.exception and at.sidebar.number_input(key="ctl_medusa_nodes").value == 4
    run = at.session_state["run"]
    assert run.generation.drafter.nodes == 4 and run.cursor == 0
    at.button(key="nav_next").click().run()
    assert not at.exception and 0 < len(run.current.draft_tokens) <= 4
