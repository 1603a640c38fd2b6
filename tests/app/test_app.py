"""The app starts, shows the models, and renders a sample as plain text."""

from conftest import app_test, shown


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
