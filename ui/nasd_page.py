"""NASD storage: how the n-gram storage grows round by round, and the drafts it produces."""

import streamlit as st

from specviz.drafters.nasd import NASDDrafter
from ui.common import page_setup, question
from ui.controls import active_session
from ui.knobs import drafter_gate, drafter_knob_row
from ui.nasd_view import nasd_view
from ui.navigator import navigator


def render() -> None:
    page_setup()
    st.title("NASD storage")
    top = st.container()  # where a real model's one sentence goes: the words below are the character model's
    question(
        "How does a drafter that learns from the text as it goes get better, and where is its own verification rule wrong?"
    )
    st.caption("N-gram assisted speculative decoding drafts from a table, not a model: (last n−1 characters) → counts of "
               "the next character. It starts from the prompt's n-grams and learns from every round.")  # fmt: skip
    if (session := active_session("The NASD storage page", top)) is not None and drafter_gate(session, {NASDDrafter.name: NASDDrafter.preset},
                                                                  "the NASD storage"):  # fmt: skip
        drafter_knob_row(NASDDrafter.name)
        navigator(session, nasd_view)
