"""MTP on the step page, in AppTest: the modules' panel, one row per drafted depth."""

from conftest import click, open_page


def test_step_page_shows_one_row_per_module():
    at = open_page("pages/step.py", {"drafter": "mtp", "k": "8", "temperature": "0.8", "max_new_tokens": "20"})
    click(at, "nav_next")
    r = at.session_state["run"].current
    assert 1 <= len(r.draft_tokens) <= 4  # K = 8, but no module past D = 4
    assert any("(MTP) modules" in m.value and "frozen" in m.value for m in at.markdown)
    frames = [d.value for d in at.dataframe if "module" in d.value.columns]
    assert len(frames) == 1 and frames[0]["module"].tolist() == list(range(1, len(r.draft_tokens) + 1))
    assert frames[0]["scratch"].tolist()[0] == 0  # module 1 reads the context only
