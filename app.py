"""specviz: the router. Each page lives in pages/ and renders what specviz/ computes.

The file has two roles. `streamlit run app.py` imports it as a module, with no script run under way:
it then declares the server (st.App) whose start-up warms the first page's imports and models while
the browser loads (ui/startup.py). Each session then runs it as a script: the router."""

from contextlib import asynccontextmanager
from pathlib import Path

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from ui import startup


@asynccontextmanager
async def lifespan(_app):
    startup.begin()
    yield


if get_script_run_ctx(suppress_warning=True) is None:  # the server's import, before any page
    app = st.App(Path(__file__), lifespan=lifespan)
else:
    startup.wait()
    st.navigation(
        [
            st.Page("pages/home.py", title="Home", default=True),
            st.Page("pages/lesson.py", title="Guided lesson", url_path="lesson"),
            st.Page("pages/step.py", title="Step through", url_path="step"),
            st.Page("pages/tree.py", title="Trie and tree attention", url_path="tree"),
            st.Page("pages/nasd.py", title="NASD storage", url_path="nasd"),
            st.Page("pages/shootout.py", title="Drafter shoot-out", url_path="shootout"),
            st.Page("pages/atlas.py", title="Methods atlas", url_path="atlas"),
            st.Page("pages/exactness.py", title="Exactness lab", url_path="exactness"),
            st.Page("pages/acceptance.py", title="Acceptance math", url_path="acceptance"),
            st.Page("pages/load.py", title="Speculation under load", url_path="load"),
        ]
    ).run()
