"""Step through: one speculative round at a time, the text beside every chart of the round, or
the round phase by phase (draft, verify, each check, residual or bonus, trim)."""

import streamlit as st

from specviz.core.session import Session
from ui.common import page_setup, question
from ui.controls import active_session
from ui.navigator import navigator
from ui.phase_view import phase_view
from ui.round_view import round_view


def view(session: Session) -> None:
    """The whole round at once, or phase by phase (the toggle above the navigator)."""
    if session.current is not None and st.session_state.get("phase_mode"):
        phase_view(session)
    else:
        round_view(session)


def render() -> None:
    page_setup()
    st.title("Step through speculative decoding")
    question("What does each round draft, check, keep and throw away?")
    st.caption("Each round: the drafter proposes K characters, the target checks them all in one forward pass, "
               "accepts or rejects each, and adds one character of its own. Use Next, or Play.")  # fmt: skip
    if (session := active_session()) is not None:
        st.toggle("Phase by phase", key="phase_mode", help="Walk through the round one phase at a time: draft, "
                  "verify, each check, the residual or bonus, the KV trim; the text, the charts and the KV cache "
                  "all point at the same candidate. Shift+Left and Shift+Right step the phases.")  # fmt: skip
        navigator(session, view)
