"""A student without a browser: one Streamlit session driven over the app's own websocket, the
bytes a browser would send and receive, with no drawing. A class's browsers run on the students'
own machines; on one 2-core machine, 30 chromium renderers drawing plotly would measure the
renderers, not the server. Wire students put the class's load on the server while the machine's
other core stays free for the real browsers beside them (benchmarks/class_size.py).

The protocol, as the frontend speaks it (streamlit 1.67): connect to ``/_stcore/stream`` with the
"streamlit" subprotocol; each script run is a BackMsg ``rerun_script`` carrying the query string,
the page and the widget states (a button click is its widget's ``trigger_value``); the server
answers with ForwardMsgs (deltas, then ``script_finished``). A click on a widget inside a fragment
names the fragment, and only the fragment reruns (the step page's navigator is one). Widgets the message leaves out keep
the values the session already has, as for a browser that did not touch them.
"""

import asyncio
import random
import re
import time
from urllib.parse import urlencode

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

EARLY_FOR_RERUN = 2  # ScriptFinishedStatus: the run stopped to start another (st.navigation switching pages)


class WireSession:
    """One browser tab's session, without the browser."""

    def __init__(self, ws, query: dict, page: str):
        self.ws, self.query, self.page = ws, urlencode(query), page
        self.page_hash = ""  # learnt from the navigation message, as the frontend does
        self.buttons: dict[str, tuple[str, str]] = {}  # label -> (widget id, its fragment's id or ""), from deltas
        self.elements: list = []  # the last run's new elements (protos), in the order they came

    async def rerun(self, clicked: str | None = None, heading: str | None = None) -> float | None:
        """Run the page (clicking the button labelled ``clicked``); returns the seconds until a heading
        matching ``heading`` arrived (None if none did), after waiting for the run to finish."""
        msg = BackMsg()
        state = msg.rerun_script
        state.query_string, state.page_name, state.page_script_hash = self.query, self.page, self.page_hash
        if clicked is not None:
            widget_id, state.fragment_id = self.buttons[clicked]  # a click inside a fragment reruns just that
            state.widget_states.widgets.append(WidgetState(id=widget_id, trigger_value=True))
        t0, seen, self.elements = time.perf_counter(), None, []
        await self.ws.send(msg.SerializeToString())
        while True:
            fwd = ForwardMsg()
            fwd.ParseFromString(await self.ws.recv())
            kind = fwd.WhichOneof("type")
            if kind == "navigation":
                self.page_hash = next(
                    p.page_script_hash for p in fwd.navigation.app_pages if p.url_pathname == self.page
                )
            elif kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                element = fwd.delta.new_element
                self.elements.append(element)
                if element.WhichOneof("type") == "button":
                    self.buttons[element.button.label] = element.button.id, fwd.delta.fragment_id
                elif element.WhichOneof("type") == "heading" and seen is None and heading:
                    seen = time.perf_counter() - t0 if re.match(heading, element.heading.body) else None
            elif kind == "script_finished" and fwd.script_finished != EARLY_FOR_RERUN:
                return seen


async def wire_student(
    base_url: str, query: dict, steps: int, think: float, rng: random.Random
) -> tuple[list[float], int]:
    """Open the step page, then click Next ``steps`` times, pausing as a reader does. -> (seconds
    from each click until the new round's heading arrived, 0 clicks made again: a wire click is
    answered or the run fails)"""
    import websockets

    url = base_url.replace("http://", "ws://", 1) + "/_stcore/stream"
    async with websockets.connect(url, subprotocols=["streamlit"], max_size=None) as ws:
        session = WireSession(ws, query, "step")
        await session.rerun()
        times = []
        for i in range(steps):
            await asyncio.sleep(rng.uniform(0.5 * think, 1.5 * think))
            seconds = await session.rerun(clicked="Next", heading=f"Round {i + 1}:")
            if seconds is None:
                raise RuntimeError(f"a wire student's Next did not bring round {i + 1}")
            times.append(seconds)
    return times, 0
