"""The step page's phase-by-phase view in AppTest."""

from conftest import open_page


def test_the_step_page_walks_the_phases():
    at = open_page("pages/step.py", timeout=300)
    at.toggle(key="phase_mode").set_value(True).run()
    at.button(key="nav_next").click().run()
    texts = []
    while True:
        assert not at.exception
        texts.append(at.get("progress")[0].proto.text)
        if at.button(key="phase_next").disabled:
            break
        at.button(key="phase_next").click().run()
    assert texts[0].startswith("Phase 1 draft") and "trim" in texts[-1] and len(texts) >= 5
    at.button(key="nav_next").click().run()  # the next round starts again at its first phase
    assert at.get("progress")[0].proto.text.startswith("Phase 1 draft")
