"""The class benchmark (benchmarks/class_size.py) runs: two browser students on one server. It
asserts what it measured is well formed, never how fast it was (speed is for benchmarks)."""

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))

import class_size  # noqa: E402


def test_two_students_step_through_one_shared_run():
    res = class_size.measure(students=2, steps=2, think=0.2, pin=False, browsers=1)  # one chromium, one on the wire
    assert res["clicks"] == 4 and res["browser"]["clicks"] == 2 and res["wire"]["clicks"] == 2
    for group in (res, res["browser"], res["wire"]):
        assert 0 < group["p50_s"] <= group["p95_s"] <= group["max_s"]
    assert res["server_rss_peak_mb"] > 100  # the models are loaded in the server


def test_every_run_sends_the_sidebar_its_values(app_url):
    """A browser that redraws a sidebar widget must get the run's value with it, not the widget's
    bare default: under a class of 30 a browser sent back an empty prompt, drafter 'none' and K = 1.
    Each run's sidebar widgets carry their values (set_value), on the second run as on the first."""
    import websockets
    from wire_student import WireSession

    query = {**class_size.QUERY, "k": "3"}

    async def two_runs():
        url = app_url.replace("http://", "ws://", 1) + "/_stcore/stream"
        async with websockets.connect(url, subprotocols=["streamlit"], max_size=None) as ws:
            session, shown = WireSession(ws, query, "step"), []
            for _ in range(2):
                await session.rerun()
                prompt = next(e.text_area for e in session.elements if e.WhichOneof("type") == "text_area")
                sliders = [e.slider for e in session.elements if e.WhichOneof("type") == "slider"]
                shown.append((prompt, next(s for s in sliders if s.label.startswith("K "))))
            return shown

    runs = class_size.run_async(two_runs())
    assert len(runs) == 2
    for prompt, k in runs:
        assert prompt.set_value and prompt.value == query["prompt"]
        assert k.set_value and list(k.value) == [3]
