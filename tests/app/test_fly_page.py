"""FLy in AppTest: its knobs show in the sidebar under its rule only, the rule is offered labelled
lossy, and a link's FLy knobs reach the run."""

from conftest import open_page

from specviz.core.settings import KNOBS


def test_fly_knobs_show_under_its_rule_only():
    at = open_page("pages/step.py", {"drafter": "neural", "verification": "fly", "fly_window": "2"})
    run = at.session_state["run"].generation.settings
    assert run.verification == "fly" and run.fly_window == 2
    assert "fly (lossy)" in at.sidebar.selectbox(key="ctl_verification").options
    fly = [n for n, k in KNOBS.items() if "fly" in k.verification]
    assert fly == ["fly_entropy", "fly_window"]
    shown = {w.key for w in at.sidebar.number_input} | {w.key for w in at.sidebar.slider}
    assert {f"ctl_{n}" for n in fly} <= shown
    at = open_page("pages/step.py", {"drafter": "neural"})
    shown = {w.key for w in at.sidebar.number_input} | {w.key for w in at.sidebar.slider}
    assert not {f"ctl_{n}" for n in fly} & shown


def test_the_step_page_draws_the_gate_and_the_window():
    from conftest import chart_specs

    at = open_page("pages/step.py", {"drafter": "neural", "verification": "fly", "temperature": "1", "k": "6"})
    at.button(key="nav_next").click().run()
    assert not at.exception
    gate = [f for f in chart_specs(at) if f["layout"]["title"]["text"].startswith("FLy: the target")]
    assert len(gate) == 1
    r = at.session_state["run"].current
    bars = {d["name"]: len(d["x"]) for d in gate[0]["data"]}
    assert sum(bars.values()) == len(r.positions) and bars.get("kept (deferred)", 0) == len(r.verify_notes["deferred"])
