"""Parallel drafting on the step page, in AppTest: the K slots one pass filled, each slot's distribution and
which slots the target accepted, for the chain (dflash) and DDTree (dflash-tree)."""

import pytest
from conftest import chart_specs, click, open_page


@pytest.mark.parametrize("drafter", ["dflash", "dflash-tree"])
def test_step_page_shows_the_slots_filled_in_one_pass(drafter):
    at = open_page("pages/step.py", {"drafter": drafter, "k": "5", "max_new_tokens": "20", "temperature": "0.8"})
    click(at, "nav_next")
    assert not at.exception, at.exception
    r = at.session_state["run"].current
    slots = next(s for s in chart_specs(at) if s["layout"]["title"]["text"].startswith("5 slots filled in one"))
    first = next(d for d in slots["data"] if d["name"] == "rank 1")
    assert first["y"] == [p[0] for p in r.draft_notes["slots"]["p"]]
    verdicts = [a["text"] for a in slots["layout"]["annotations"]]
    assert len(verdicts) == 5 and sum("<b>accepted</b>" in v for v in verdicts) == len(r.accepted_path)
