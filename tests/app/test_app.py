"""The app starts, shows the models, and renders a sample as plain text."""

import re

import streamlit as st
from conftest import app_test, shown

import ui.home


def test_home_loads_and_generates():
    at = app_test().run()
    assert not at.exception
    assert at.title[0].value == "specviz"
    generate = lambda: next(b for b in at.button if b.label == "Generate")  # noqa: E731
    at.text_area[0].set_value("<b>ROMEO</b>")  # '<' is not in the vocabulary: a message, not a traceback
    generate().click().run()
    assert not at.exception
    assert "not in the vocabulary" in shown(at.error[0].value) and "'<'" in shown(at.error[0].value)
    at.text_area[0].set_value("ROMEO:\n")
    at.number_input[0].set_value(40)
    generate().click().run()
    assert not at.exception
    assert at.text[0].value.startswith("ROMEO:\n") and len(at.text[0].value) == len("ROMEO:\n") + 40


def test_home_is_drawn_before_the_race_is_timed(monkeypatch):
    """The race is timed last, after the rest of Home is drawn. Stopped right where it would be timed,
    the page has its title, its explanation, the race's controls, every section below the race, and in
    the race's place a note that it is being timed; run to the end, the lanes replace the note."""
    ui.home.races.clear()  # nothing timed in this process yet, as on a server's first start
    monkeypatch.setattr(ui.home, "race", lambda *a, **k: st.stop())
    at = app_test().run()
    assert not at.exception
    assert at.title[0].value == "specviz" and "**Speculative decoding**" in at.markdown[0].value
    assert at.selectbox(key="race_drafter").label == "Drafter" and at.select_slider(key="race_temperature")
    assert [b.label for b in at.button if b.label in ("Measure again", "Generate")] == ["Measure again", "Generate"]
    assert [s.value for s in at.subheader][-2:] == ["The models", "A sample from the target"]
    assert [i.value for i in at.info] == [ui.home.TIMING_NOTE] and not at.caption
    monkeypatch.undo()
    at.run()
    assert not at.exception and not at.info and at.caption[0].value.startswith(ui.home.RACE_CAPTION)
    # the race's run-to-run spread: its 3 runs of each lane, and the lowest and highest speedup between them
    spread = re.search(r"Its 3 runs, measured just now on this machine: plain (\d+), (\d+), (\d+) ms, speculative "
                       r"(\d+), (\d+), (\d+) ms; run by run, ([\d.]+)× to ([\d.]+)× as fast", at.caption[0].value)  # fmt: skip
    assert spread, at.caption[0].value
    plain, spec = [int(x) for x in spread.groups()[:3]], [int(x) for x in spread.groups()[3:6]]
    ratios = [a / b for a, b in zip(plain, spec, strict=True)]
    lo, hi = float(spread[7]), float(spread[8])
    assert lo <= hi and abs(lo - min(ratios)) < 0.05 * lo + 0.02 and abs(hi - max(ratios)) < 0.05 * hi + 0.02
