"""The trie page in AppTest: it switches drafter, steps and rebuilds with its knobs, and stays up
on bad knobs."""

import pytest
from conftest import chart_specs, open_page, shown

from models.checkpoint import load_checkpoint
from specviz.drafters import drafter_names
from specviz.drafters.trie import TrieDrafter
from specviz.teaching.presets import preset

TREE_DRAFTERS = drafter_names(tree=True)


def test_page_switches_drafter_steps_and_rebuilds():
    at = open_page("pages/tree.py", {"preset": "Quote a passage"})
    # the sidebar's default is the trigram; every tree drafter is offered
    named = " or ".join(f"**{d}**" for d in TREE_DRAFTERS)
    assert any(f"only the {named} drafters" in i.value for i in at.info)
    assert all(at.button(key=f"switch_to_{d}") for d in TREE_DRAFTERS)
    assert not at.get("plotly_chart")
    at.button(key="switch_to_trie").click().run()
    assert not at.exception and at.sidebar.selectbox(key="ctl_drafter").value == "trie"
    # the switch also opens the trie's own preset, where the page has something to show
    assert at.sidebar.selectbox(key="ctl_preset").value == TrieDrafter.preset
    assert at.session_state["run"].cursor == 0 and at.session_state["run"].generation.trace.prompt == load_checkpoint(
        "target"
    ).tokenizer.encode(preset(TrieDrafter.preset).text)
    session = at.session_state["run"]
    # Before round 1, the page previews the first draft: the same tree the first round then sends.
    preview = [d for d in chart_specs(at)[0]["data"] if d.get("name") in ("draft tree (pruned)", "accepted path")]
    at.button(key="nav_next").click().run()
    assert not at.exception
    r = session.current
    assert sum(len(d["x"]) for d in preview) == len(r.draft_tokens) > 1
    figs = chart_specs(at)
    heat = next(d for f in figs for d in f["data"] if d["type"] == "heatmap")
    assert heat["z"] == [[int(v) for v in row] for row in r.tree_mask]
    flat = next(f for f in figs if f["layout"]["title"]["text"].startswith("Depth-first"))
    assert flat["layout"]["xaxis"]["ticktext"] == [str(p) for p in r.draft_positions]
    # The on-page slider is the sidebar's knob: moving it rebuilds the trie and restarts the run.
    at.slider(key="knob_trie_num_draft").set_value(3).run()
    assert not at.exception and at.sidebar.number_input(key="ctl_trie_num_draft").value == 3
    rebuilt = at.session_state["run"]
    assert rebuilt is not session and rebuilt.cursor == 0 and rebuilt.generation.drafter.num_draft == 3
    at.button(key="nav_next").click().run()
    assert not at.exception and 0 < len(rebuilt.current.draft_tokens) <= 3


def test_bad_knobs_keep_the_page_up():
    at = open_page("pages/tree.py", {"preset": "Quote a passage", "drafter": "trie"})
    at.slider(key="knob_trie_prefix_len").set_value(13).run()  # L_p must stay below n = 13
    assert not at.exception and "L_p must be below trie_n" in shown(at.error[0].value)
    assert at.session_state["run"].generation.settings.trie_prefix_len == 3  # the previous run stays


@pytest.mark.parametrize("drafter", drafter_names(shaped=True))
def test_sequoia_shape_beside_the_dynamic_tree(drafter):
    """Every drafter with the trait shaped, Sequoia-shaped: the page draws this round's grown tree and
    Sequoia's shape at the same budget, each titled with its tau by the rank/depth model, and the run's
    own tau; Sequoia's drawn tree has the shape this round's draft had."""
    at = open_page("pages/tree.py", {"preset": "Dialogue", "drafter": drafter, "tree_shape": "sequoia"})
    assert not at.exception and at.session_state["run"].generation.settings.tree_shape == "sequoia"
    at.button(key="nav_next").click().run()
    assert not at.exception
    r = at.session_state["run"].current
    assert r.draft_tokens and r.draft_notes["shape"] == "sequoia"
    figs = [f for f in chart_specs(at) if "τ = " in f["layout"]["title"]["text"]]
    # "<shape>: <n> nodes, τ = <tau> by the model" (wrapped)
    assert [f["layout"]["title"]["text"].split(":")[0] for f in figs] == ["dynamic", "sequoia"]
    assert f"sequoia: {len(r.draft_tokens)} nodes" in figs[1]["layout"]["title"]["text"]
    assert any("This run (sequoia) so far: τ = " in shown(c.value) for c in at.caption)
