"""The NASD page in AppTest: it steps, its charts hold the rounds' additions, and its knobs rebuild the run."""

import re

from conftest import chart_specs, click, open_page


def by_source(r, source):
    return sum(a["source"] == source for a in r.drafter_update["added"])


def test_page_steps_and_rebuilds():
    at = open_page("pages/nasd.py", {"preset": "Quote a passage", "nasd_filler_top_k": "3"})
    assert any("only the **nasd** drafter" in i.value for i in at.info) and not at.get("plotly_chart")
    at.button(key="switch_to_nasd").click().run()
    assert not at.exception and at.session_state["run"].generation.settings.drafter == "nasd"
    assert at.sidebar.selectbox(key="ctl_preset").value == "Repetitive"  # its own preset, where the storage fills
    for _ in range(4):
        click(at, "nav_next")
    session = at.session_state["run"]
    rounds = session.rounds[: session.cursor]
    growth = chart_specs(at)[0]
    bars = {d["name"]: d["y"] for d in growth["data"] if d["type"] == "bar"}
    assert bars["added from filler_top_k"] == [by_source(r, "filler_top_k") for r in rounds]
    assert sum(map(sum, bars.values())) == sum(len(r.drafter_update["added"]) for r in rounds)
    assert re.match(rf"Round {session.cursor}: ", at.subheader[0].value)
    lookups, added = at.dataframe[0].value, at.dataframe[1].value
    assert len(lookups) == len(session.current.draft_notes["lookups"])
    assert len(added) == len(session.current.drafter_update["added"])
    at.slider(key="knob_nasd_n").set_value(4).run()
    assert not at.exception and at.session_state["ctl_nasd_n"] == 4
    rebuilt = at.session_state["run"]
    assert rebuilt is not session and rebuilt.cursor == 0 and rebuilt.generation.drafter.n == 4
