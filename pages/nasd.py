"""NASD storage: how the n-gram storage grows round by round, and the drafts it produces."""

import streamlit as st

from pages.common import page_setup
from pages.controls import HELP, active_session
from pages.knobs import drafter_gate, knob
from pages.nasd_view import nasd_view
from pages.navigator import navigator

page_setup()
st.title("NASD storage")
st.caption("N-gram assisted speculative decoding drafts from a table, not a model: (last n−1 characters) → counts of "
           "the next character. It starts from the prompt's n-grams and learns from every round.")  # fmt: skip
if (session := active_session()) is not None and drafter_gate(session, "nasd", "the NASD storage"):
    c = st.columns(2)
    with c[0]:
        knob("nasd_n", "n (context = n − 1 characters)", HELP["nasd_n"])
    with c[1]:
        knob("nasd_filler_top_k", "filler_top_k", HELP["nasd_filler_top_k"])
    st.caption("Moving a slider rebuilds the storage and restarts the run from the prompt.")
    navigator(session, nasd_view)
