"""specviz: the router. Each page lives in pages/ and renders what specviz/ computes."""

import streamlit as st

st.navigation([st.Page("pages/home.py", title="Home", icon=":material/home:", default=True)]).run()
