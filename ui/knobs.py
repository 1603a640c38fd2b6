"""What the drafter pages (trie, NASD) share: a note and a button when the sidebar runs another
drafter, on-page sliders for the drafter's knobs, and the text so far with the prompt cut short.

A widget key can be used once per run and the sidebar already owns ``ctl_<name>``, so an on-page
slider has its own key, is re-seeded from the sidebar's value on every run, and copies its value
back in a callback. Callbacks run before the script, so the sidebar and the run (active_session
restarts it when a setting changes) both see the new value in the same rerun.
"""

import streamlit as st

from specviz.engine import Session
from specviz.query import APP_LIMITS
from specviz.record import Trace
from specviz.text_view import text_html
from ui.controls import HELP


def _use(name: str, value) -> None:
    st.session_state[f"ctl_{name}"] = value


def _copy(name: str) -> None:
    _use(name, st.session_state[f"knob_{name}"])


def drafter_gate(session: Session, drafters: str | tuple[str, ...], what: str) -> bool:
    """True when the run uses one of ``drafters``; otherwise explain, offer a switch to each, and
    return False."""
    drafters = (drafters,) if isinstance(drafters, str) else tuple(drafters)
    current = session.generation.settings.drafter
    if current in drafters:
        return True
    which = " or ".join(f"**{d}**" for d in drafters)
    st.info(f"This page shows {what}, which only the {which} drafter{'s have' if len(drafters) > 1 else ' has'}. "
            f"The sidebar's drafter is **{current}**.")  # fmt: skip
    row = st.container(horizontal=True)  # wraps: every label whole, however many drafters
    for d in drafters:
        row.button(f"Switch the drafter to {d}", on_click=_use, args=("drafter", d), type="primary",
                   key=f"switch_to_{d}")  # fmt: skip
    return False


def knob_row(labels: dict[str, str], rebuilds: str) -> None:
    """Side by side, a slider per sidebar setting in ``labels`` (name -> label); moving one
    restarts the run."""
    for col, (name, label) in zip(st.columns(len(labels)), labels.items(), strict=True):
        st.session_state[f"knob_{name}"] = st.session_state[f"ctl_{name}"]
        lo, hi = APP_LIMITS[name]
        col.slider(label, lo, hi, key=f"knob_{name}", on_change=_copy, args=(name,), help=HELP[name])
    st.caption(f"Moving a slider rebuilds {rebuilds} and restarts the run from the prompt.")


def text_tail(trace: Trace, cursor: int, keep: int = 160) -> None:
    """The text so far, the prompt cut to its last ``keep`` characters so the round stays in view."""
    if len(trace.prompt) > keep:
        st.caption(f"… the prompt's first {len(trace.prompt) - keep} characters are not shown.")
        trace = Trace(trace.settings, trace.vocab, trace.prompt[-keep:], trace.rounds)
    st.html(text_html(trace, cursor))
