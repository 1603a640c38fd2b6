"""specviz: the router. Each page lives in pages/ and renders what specviz/ computes."""

import streamlit as st

st.navigation(
    [
        st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
        st.Page("pages/lesson.py", title="Guided lesson", icon=":material/school:", url_path="lesson"),
        st.Page("pages/step.py", title="Step through", icon=":material/step:", url_path="step"),
        st.Page("pages/tree.py", title="Trie and tree attention", icon=":material/account_tree:", url_path="tree"),
        st.Page("pages/nasd.py", title="NASD storage", icon=":material/database:", url_path="nasd"),
        st.Page("pages/shootout.py", title="Drafter shoot-out", icon=":material/leaderboard:", url_path="shootout"),
        st.Page("pages/exactness.py", title="Exactness lab", icon=":material/science:", url_path="exactness"),
        st.Page("pages/acceptance.py", title="Acceptance math", icon=":material/functions:", url_path="acceptance"),
    ]
).run()
