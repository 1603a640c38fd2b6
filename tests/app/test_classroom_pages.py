"""What a class sees on the projector: the run on screen is the one the page names, and the app's own
presets and buttons never trigger its own warnings."""

from conftest import open_page, rerun

from specviz.core.markup import md
from specviz.drafters import REGISTRY
from specviz.teaching.presets import APP_PRESETS, preset

WINDOW = "the model sees at most"


def _messages(at) -> list[str]:
    return [m.value for kind in ("error", "warning", "info") for m in getattr(at.main, kind)]


def test_rejected_prompt_says_which_prompt_the_run_uses():
    at = open_page("pages/step.py", {"preset": "Repetitive"})
    first = preset("Repetitive").text
    at.text_area(key="ctl_prompt").set_value("the cat sat on the mat — ünïcode")
    rerun(at)
    assert any("The prompt has" in e.value for e in at.error), [e.value for e in at.error]
    notes = [w.value for w in at.warning if "uses the previous prompt" in w.value]
    assert len(notes) == 1 and md(first, 40) in notes[0] and "not the text in the box" in notes[0], notes


def test_rejected_prompt_on_the_exactness_lab_says_which_prompt_its_results_use():
    """The lab's last results stay on screen under a rejected prompt, with a note naming their prompt."""
    at = open_page("pages/exactness.py", {"preset": "Repetitive", "k": "2"})
    at.number_input(key="ex_samples").set_value(100)
    at.radio(key="ex_tokens").set_value(2)
    at.button(key="ex_run").click()
    rerun(at)
    assert not [w for w in at.warning if "previous prompt" in w.value]  # a valid run: no note
    at.text_area(key="ctl_prompt").set_value("the cat sat on the mat — ünïcode")
    rerun(at)
    assert any("The prompt has" in e.value for e in at.error), [e.value for e in at.error]
    notes = [w.value for w in at.warning if "uses the previous prompt" in w.value]
    assert (
        len(notes) == 1 and notes[0].startswith("The results shown") and md(preset("Repetitive").text, 40) in notes[0]
    )


def test_no_preset_triggers_the_apps_warnings():
    at = open_page("pages/step.py")
    for p in APP_PRESETS:
        at.selectbox(key="ctl_preset").set_value(p.name)
        rerun(at)
        assert not [m for m in _messages(at) if WINDOW in m or "prompt has" in m], (p.name, _messages(at))


def test_show_buttons_trigger_no_warning():
    tree_drafters = [d for d, cls in REGISTRY.items() if cls.tree]
    for d in tree_drafters:
        at = open_page("pages/tree.py", {"drafter": "none"})
        at.button(key=f"switch_to_{d}").click()
        rerun(at)
        assert not [m for m in _messages(at) if WINDOW in m or "prompt has" in m], (d, _messages(at))
