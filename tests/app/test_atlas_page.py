"""The atlas page in AppTest: each method's row links to its step page."""

from urllib.parse import parse_qsl

from conftest import open_page

from specviz.teaching.atlas import methods


def test_the_atlas_page_links_each_method_to_its_step_page():
    at = open_page("pages/atlas.py", timeout=300)
    frame = at.dataframe[0].value
    assert list(frame["method"]) == [m.name for m in methods()]
    link = dict(parse_qsl(frame["open"][list(frame["method"]).index("suffix")].split("?", 1)[1]))
    step = open_page("pages/step.py", link, timeout=300)
    assert step.session_state["run"].generation.settings.drafter == "suffix"
