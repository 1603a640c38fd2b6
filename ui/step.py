"""Step through: one speculative round at a time, the text beside every chart of the round."""

import streamlit as st

from ui.common import page_setup
from ui.controls import active_session
from ui.navigator import navigator
from ui.round_view import round_view


def render() -> None:
    page_setup()
    st.title("Step through speculative decoding")
    st.caption("Each round: the drafter proposes K characters, the target checks them all in one forward pass, "
               "accepts or rejects each, and adds one character of its own. Use Next, or Play.")  # fmt: skip
    if (session := active_session()) is not None:
        navigator(session, round_view)
