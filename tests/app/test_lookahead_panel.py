"""The step page's lookahead panel in AppTest: the Jacobi window and the n-gram pool."""

from conftest import click, open_page


def test_the_step_page_draws_the_lookahead_panel():
    at = open_page("pages/step.py", {"drafter": "lookahead", "k": "4", "temperature": "0.8", "max_new_tokens": "20"})
    for _ in range(2):
        click(at, "nav_next")
    text = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
    assert "Jacobi window and the n-gram pool" in text and "verify pass ran" in text
    assert any(c.proto.spec and "Jacobi window" in c.proto.spec for c in at.get("plotly_chart"))
