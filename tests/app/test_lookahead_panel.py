"""The step page's lookahead panel in AppTest: the Jacobi window and the n-gram pool."""

from conftest import APP


def test_the_step_page_draws_the_lookahead_panel():

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(APP), default_timeout=900)
    at.query_params.update({"drafter": "lookahead", "k": "4", "temperature": "0.8", "max_new_tokens": "20"})
    at.switch_page("pages/step.py")
    at.run()
    for _ in range(2):
        at.button(key="nav_next").click().run()
        assert not at.exception, at.exception
    text = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
    assert "Jacobi window and the n-gram pool" in text and "verify pass ran" in text
    assert any(c.proto.spec and "Jacobi window" in c.proto.spec for c in at.get("plotly_chart"))
