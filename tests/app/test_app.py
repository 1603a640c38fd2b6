"""The app starts, shows the models, and renders a sample as plain text."""

import re

import streamlit as st
from conftest import app_test, shown

import ui.common
import ui.home
from specviz.adaptive.costs import cpu_name


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


def _race_caption(at) -> str:
    return at.caption[0].value.replace("\\", "")  # the stored run's sentence is escaped markdown


def _ranges(text: str) -> list[tuple[float, float, float]]:
    """Every "2.09× (2.00–2.18× over its 3 runs)" in the caption: (figure, lowest, highest)."""
    found = re.findall(r"([\d.]+)× \(([\d.]+)–([\d.]+)× over its \d+ runs\)", text)
    return [tuple(float(x) for x in f) for f in found]


def test_home_race_against_the_atlas():
    """Home's race and the atlas's stored run of the same configuration (distilled, T = 0, adaptive K): the
    caption gives both figures with their run-to-run spreads, and says they agree exactly when the spreads
    overlap, else why they need not (another CPU, other text)."""
    rows = ui.common.stored_bench()
    stored = next(r for r in rows if (r["suite"], r["drafter"], r["temperature"], r["k_auto"], r["verification"])
                  == ("main", "distilled", 0.0, True, "lossless"))  # fmt: skip
    at = app_test().run()
    assert not at.exception
    text = _race_caption(at)
    (s, s_lo, s_hi), (r, r_lo, r_hi) = _ranges(text)
    assert (s, s_lo, s_hi) == tuple(round(stored[k], 2) for k in ("speedup", "speedup_min", "speedup_max")), text
    assert r_lo <= r <= r_hi
    overlap = r_lo <= s_hi and s_lo <= r_hi
    assert ("agree within their run-to-run spread" in text) == overlap, text
    if not overlap:
        assert "decoded other text" in text, text  # the race's one prompt against the bench's 11


def test_home_race_against_a_disagreeing_stored_run(monkeypatch):
    """A stored run far from anything this machine measures (9×, on the same CPU and the same text as the race):
    the caption says the figures differ beyond both spreads, and does not call them in agreement."""
    ui.home.races.clear()
    at = app_test().run()  # the race timed, and its figure read from the caption
    assert not at.exception
    fake = {"suite": "main", "impl": "specviz", "drafter": "distilled", "verification": "lossless", "k_auto": True,
            "temperature": 0.0, "k": 12, "speedup": 9.0, "speedup_min": 8.9, "speedup_max": 9.1, "repeats": 3,
            "cpu": cpu_name(), "prompts": 1, "new_tokens": 200}  # fmt: skip
    monkeypatch.setattr(ui.home, "stored_bench", lambda: [fake])
    at.run()
    text = _race_caption(at)
    assert "9.00× (8.90–9.10× over its 3 runs)" in text and "agree within" not in text, text
    assert "differ by more than their spread" in text, text


def test_home_and_step_draw_before_the_kernels_start(monkeypatch):
    """On a machine's first start the kernels' build takes the CPU: Home and Step through are drawn before it
    starts. Stopped where the build would start, each page has already drawn what makes it usable."""
    from conftest import open_page

    from specviz.kernels import native

    monkeypatch.setattr(native, "prepare_in_background", lambda: st.stop())
    ui.home.races.clear()
    home = app_test().run()
    assert not home.exception
    assert [b.label for b in home.button if b.label in ("Measure again", "Generate")] == ["Measure again", "Generate"]
    step = open_page("pages/step.py")
    assert not step.exception and step.button(key="nav_next").label == "Next"
