"""The round navigator shared by the step-through pages: previous, next, play/pause, scrub, run
to the end, reset. Every button acts through a callback on the user's Session before the page
renders, so the page always draws the state the click produced. Going back never recomputes:
the Session keeps every round it computed.

The controls and the view are one fragment: a click redraws them, not the page around them.
Autoplay makes the fragment rerun itself every ``delay`` seconds and step once per rerun; it
turns itself off at the end of the run.
"""

import time

import streamlit as st

from specviz.core.markup import md
from specviz.core.session import Session

SPEEDS = {"slow (2 s)": 2.0, "medium (1 s)": 1.0, "fast (0.4 s)": 0.4}
DEFAULT_SPEED = "medium (1 s)"


def _act(action: str) -> None:
    session: Session = st.session_state.run
    try:
        if action == "next":
            session.forward()
        elif action == "back":
            session.back()
        elif action == "reset":
            session.seek(0)
        elif action == "end":
            session.run_to_end()
        elif action == "scrub":
            session.seek(st.session_state.scrub)
    except (ValueError, RuntimeError) as e:  # an engine error: say so, keep what is on screen
        st.session_state.engine_error = str(e)


def _set_play(on: bool) -> None:
    """Play or Pause sets the state its label showed, never flips it, so a click handled twice cannot undo a
    Pause (a suspected race with the fragment's timer rerun, not confirmed)."""
    st.session_state.playing = on


def navigator(session: Session, view, compact: bool = False) -> None:
    """Draw the controls, then ``view(session)``; under autoplay, step and redraw on a timer.
    ``compact``: the scrub slider's label hidden (still read by a screen reader) and the speed beside
    it, two lines saved.

    All of it is one fragment: a click on Next reruns and redraws the controls and the round, not
    the page's sidebar and header. A browser's drawing is most of a step's time (~0.25 s of it is
    Streamlit redrawing the page around the charts; benchmarks/class_size.py), and a class of 30
    sends the server 30 times the deltas."""
    playing = st.session_state.get("playing", False) and not session.at_end
    delay = SPEEDS[st.session_state.get("nav_speed", DEFAULT_SPEED)]

    @st.fragment(run_every=delay if playing else None)
    def frame():
        now_playing = st.session_state.get("playing", False) and not session.at_end
        if now_playing and time.monotonic() - st.session_state.get("last_play", 0.0) >= delay * 0.9:
            st.session_state.last_play = time.monotonic()
            _act("next")
            now_playing = not session.at_end
            if not now_playing:
                st.session_state.playing = False
        if (now_playing, SPEEDS[st.session_state.get("nav_speed", DEFAULT_SPEED)]) != (playing, delay):
            st.rerun()  # the whole page: the fragment's timer is set when the page draws it
        controls(session, now_playing, speed=not compact)
        # This session's own rounds: a shared run (ui/controls.py) grows as other students step, and a
        # slider whose range moved under a reader's hand sent its stale value back, undoing their Next.
        # Compact: the speed beside the slider, not wrapped onto a line of its own under the buttons.
        row = st.container(horizontal=True, gap="small", vertical_alignment="bottom") if compact else st
        if n := session.furthest:
            st.session_state.scrub = session.cursor
            row.slider("Round (scrub through the rounds shown so far; 0 = the prompt)", 0, max(n, 1), key="scrub",
                      on_change=_act, args=("scrub",), label_visibility="collapsed" if compact else "visible")  # fmt: skip
        if compact:
            speed_select(row)
        if error := st.session_state.pop("engine_error", None):
            st.error(f"The engine stopped: {md(error)}. The rounds so far are kept.")
        view(session)

    frame()


def speed_select(where) -> None:
    where.selectbox("Speed", list(SPEEDS), index=list(SPEEDS).index(DEFAULT_SPEED), key="nav_speed",
                    label_visibility="collapsed", width=150)  # fmt: skip


def controls(session: Session, playing: bool, speed: bool = True) -> None:
    """One row that wraps instead of cutting labels: buttons take their content's width, so a
    projector at 1024x768 shows every label whole. Keyboard: Left, Right, Home, End, P."""
    row = st.container(horizontal=True, gap="small", vertical_alignment="center")
    buttons = [  # (label, icon, action, disabled, shortcut, help)
        ("Reset", "first_page", "reset", False, "Home", "Back to the prompt (kept rounds stay)."),
        ("Previous", "chevron_left", "back", session.cursor == 0, "Left", "The round before; never recomputes."),
        ("Next", "chevron_right", "next", session.at_end, "Right", "Show the next round; computes it if it is new."),
        ("To the end", "last_page", "end", session.at_end, "End", "Compute every remaining round."),
    ]
    for label, icon, action, disabled, key, help in buttons:
        row.button(label, icon=f":material/{icon}:", on_click=_act, args=(action,), key=f"nav_{action}", shortcut=key,
                   disabled=disabled, help=help, type="primary" if action == "next" else "secondary")  # fmt: skip
    row.button(
        "Pause" if playing else "Play",
        icon=":material/pause:" if playing else ":material/play_arrow:",
        on_click=_set_play,
        args=(not playing,),
        key="nav_play",
        shortcut="P",
        disabled=session.at_end,
    )
    if speed:
        speed_select(row)
