"""The step page's phase-by-phase view of one round (specviz/teaching/phases.py): a phase control with
previous, next and play, and for the phase on screen the text, the p/q chart, the draw against
min(1, p/q), the residual or bonus and the KV ledger, all pointing at the same candidate.
Keyboard: Shift+Left and Shift+Right step the phases (Left and Right step the rounds)."""

import streamlit as st

from specviz import charts
from specviz.charts.lesson import VERIFY_HELP, VERIFY_VIEW, draft_frame, verify_frame
from specviz.charts.phase import accept_test
from specviz.core.markup import md
from specviz.core.session import Session
from specviz.teaching.phases import round_phases
from specviz.teaching.text_view import text_html
from ui.widgets import chart, table

PLAY_EVERY = 1.5  # seconds a phase stays on screen under play


def _move(delta: int, n: int) -> None:
    st.session_state.phase_i = max(0, min(n - 1, st.session_state.get("phase_i", 0) + delta))


def _toggle() -> None:
    st.session_state.phase_playing = not st.session_state.get("phase_playing", False)


def phase_view(session: Session) -> None:
    trace, r = session.generation.trace, session.current
    vocab = trace.vocab
    phases = round_phases(r, vocab)
    if st.session_state.get("phase_round") != r.index:  # a new round starts at its first phase
        st.session_state.phase_round, st.session_state.phase_i = r.index, 0
    n = len(phases)
    row = st.container(horizontal=True, gap="small", vertical_alignment="center")
    i = st.session_state.get("phase_i", 0)
    row.button("Previous phase", icon=":material/skip_previous:", on_click=_move, args=(-1, n), disabled=i == 0,
               key="phase_prev", shortcut="Shift+Left")  # fmt: skip
    row.button("Next phase", icon=":material/skip_next:", on_click=_move, args=(1, n), disabled=i == n - 1,
               key="phase_next", shortcut="Shift+Right", type="primary")  # fmt: skip
    playing = st.session_state.get("phase_playing", False)
    row.button("Pause phases" if playing else "Play phases", on_click=_toggle, key="phase_play",
               icon=":material/pause:" if playing else ":material/play_arrow:")  # fmt: skip

    @st.fragment(run_every=PLAY_EVERY if playing else None)
    def frame():
        if st.session_state.get("phase_playing"):
            if st.session_state.phase_i < n - 1:
                st.session_state.phase_i += 1
            else:
                st.session_state.phase_playing = False
        phase = phases[st.session_state.phase_i]
        st.progress((st.session_state.phase_i + 1) / n, text=f"Phase {phase.title} of {n}: {md(phase.sentence)}")
        left, right = st.columns([2, 3], gap="large")
        with left:
            st.html(text_html(trace, session.cursor, phase))
        with right:
            if phase.stage == "draft" and r.draft_tokens:
                table(draft_frame(r, vocab), vocab=vocab)
            elif phase.stage == "verify":
                table(verify_frame(r, trace.root(r), vocab), VERIFY_HELP, VERIFY_VIEW, vocab=vocab)
            elif phase.check is not None and phase.stage == "check":
                pos = r.positions[phase.check]
                chart(charts.pq_bars(pos, vocab), "phase_pq", vocab=vocab)
                chart(accept_test(pos, vocab), "phase_u", vocab=vocab)
            elif phase.stage == "residual":
                chart(charts.residual_bars(r, vocab), "phase_residual", vocab=vocab)
            elif phase.stage == "bonus":
                chart(charts.bonus_bars(r, vocab), "phase_bonus", vocab=vocab)
            chart(charts.kv_ledger(r, phase.kv_stage), "phase_kv", vocab=vocab)

    frame()
