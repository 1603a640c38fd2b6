"""specviz: the router. Each page lives in pages/ and renders what specviz/ computes."""

import streamlit as st

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
