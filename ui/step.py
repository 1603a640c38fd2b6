"""Step through: one speculative round at a time, the text beside every chart of the round, or
the round phase by phase (draft, verify, each check, residual or bonus, trim). Two layouts: the
presenter layout (the default: one round on one projector screen, ui/presenter_view.py) and the
full one (ui/round_view.py), a toggle kept in st.session_state across pages."""

import streamlit as st

from specviz.core.record import worded
from specviz.core.session import Session
from specviz.kernels import native
from ui.common import page_setup, question
from ui.controls import active_session
from ui.divergence_view import divergence_panel
from ui.model_choice import run_models
from ui.navigator import navigator
from ui.phase_view import phase_view
from ui.presenter_view import presenter_view, style
from ui.round_view import round_view

QUESTION = "What does each round draft, check, keep and throw away?"
EXPLAIN = ("Each round: the drafter proposes K characters, the target checks them all in one forward pass, "
           "accepts or rejects each, and adds one character of its own. Use Next, or Play.")  # fmt: skip
PHASE_HELP = ("Walk through the round one phase at a time: draft, verify, each check, the residual or bonus, the "
              "trim of the cache of keys and values; the text, the charts and the cache all point at the same "
              "candidate. Shift+Left and Shift+Right step the phases.")  # fmt: skip
PRESENTER_HELP = ("One round on one screen, for a projector: the text, the checks and the p/q chart side by side "
                  "under the navigator; the rest of the round below. Off: the full layout.")  # fmt: skip


def view(session: Session) -> None:
    """The whole round at once, or phase by phase (the toggle above the navigator)."""
    if session.current is not None and st.session_state.get("phase_mode"):
        phase_view(session)
    elif st.session_state.get("presenter", True):
        presenter_view(session)
    else:
        round_view(session)


def _keep_layout() -> None:
    st.session_state.presenter_kept = st.session_state.presenter


def render() -> None:
    page_setup(kernels=False)  # built or loaded once the page is drawn (below)
    # Kept across pages in a key of its own: Streamlit drops a widget's value when a page without it
    # runs, so the toggle is seeded from presenter_kept and writes back to it.
    st.session_state.presenter = presenter = st.session_state.get("presenter_kept", True)
    explain = worded(EXPLAIN, run_models()[0].tokenizer.pieces)  # "tokens" on a real model's word pieces
    if presenter:
        style()
        head = st.container(key="sv-head", horizontal=True, vertical_alignment="center", gap="small")
        head.title("Step through", width="content")
        with head.popover("About", icon=":material/info:", help="What this page shows"):
            question(QUESTION)
            st.caption(explain)
    else:
        head = st.container()
        head.title("Step through speculative decoding")
        with head:
            question(QUESTION)
            st.caption(explain)
    if (session := active_session()) is not None:
        toggles = head if presenter else st.container(horizontal=True, gap="medium")
        toggles.toggle("Presenter layout", key="presenter", help=PRESENTER_HELP, on_change=_keep_layout)
        toggles.toggle("Phase by phase", key="phase_mode", help=PHASE_HELP)
        navigator(session, view, compact=presenter)
        divergence_panel(session)  # a real model at T = 0: equal to plain decoding? (ui/divergence_view.py)
    native.prepare_in_background()  # drawn: now the kernels (a first round waits for what is left of a build)
