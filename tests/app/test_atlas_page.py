"""The atlas page in AppTest: each method's row links to its step page."""

from urllib.parse import parse_qsl

from conftest import APP
from streamlit.testing.v1 import AppTest

from specviz.teaching.atlas import METHODS


def test_the_atlas_page_links_each_method_to_its_step_page():
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.switch_page("pages/atlas.py")
    at.run()
    assert not at.exception
    frame = at.dataframe[0].value
    assert list(frame["method"]) == [m.name for m in METHODS]
    link = dict(parse_qsl(frame["open"][list(frame["method"]).index("suffix")].split("?", 1)[1]))
    step = AppTest.from_file(str(APP), default_timeout=300)
    step.query_params.update(link)
    step.switch_page("pages/step.py")
    step.run()
    assert not step.exception and step.session_state["run"].generation.settings.drafter == "suffix"
