"""What the drafter pages (trie, NASD) share: a note and a button when the sidebar runs another
drafter, on-page sliders for the drafter's knobs, and the text so far with the prompt cut short.

A widget key can be used once per run and the sidebar already owns ``ctl_<name>``, so an on-page
slider has its own key, is re-seeded from the sidebar's value on every run, and copies its value
back in a callback. Callbacks run before the script, so the sidebar and the run (active_session
restarts it when a setting changes) both see the new value in the same rerun.
"""

import streamlit as st

from specviz.core.record import Trace, worded
from specviz.core.session import Session
from specviz.core.settings import KNOBS, method_knobs
from specviz.llm.presets import LLM_PRESETS
from specviz.teaching.presets import PRESETS
from specviz.teaching.text_view import text_html
from ui.controls import knob_widget
from ui.model_choice import is_bpe, offered_drafters, run_models


def _use(name: str, value) -> None:
    st.session_state[f"ctl_{name}"] = value


def _copy(name: str) -> None:
    _use(name, st.session_state[f"knob_{name}"])


def _show(drafter: str, preset_name: str) -> None:
    text = next(p.text for p in (*PRESETS, *LLM_PRESETS) if p.name == preset_name)
    st.session_state.update(ctl_drafter=drafter, ctl_preset=preset_name, ctl_prompt=text)


def drafter_gate(session: Session, demos: dict[str, str], what: str) -> bool:
    """True when the run uses one of the drafters in ``demos`` (drafter -> the preset where this
    page's idea shows best); otherwise explain and offer, per drafter, to switch to it on its preset
    (a page never opens on nothing to see), and return False."""
    current = session.generation.settings.drafter
    if current in demos:
        return True
    checkpoint = run_models()[0]
    if is_bpe(checkpoint):  # a real model: the drafters it runs, on its quotation preset (where copying shows)
        demos = {d: LLM_PRESETS[1].name for d in demos if d in offered_drafters(checkpoint)}
        if not demos:
            st.info(f"This page shows {what}, which no drafter the app runs on a real model has yet: pick the "
                    "character GPT under Model in the sidebar.")  # fmt: skip
            return False
    which = " or ".join(f"**{d}**" for d in demos)
    st.info(f"This page shows {what}, which only the {which} drafter{'s have' if len(demos) > 1 else ' has'}. "
            f"The sidebar's drafter is **{current}**.")  # fmt: skip
    row = st.container(horizontal=True)  # wraps: every label whole, however many drafters
    for i, (d, name) in enumerate(demos.items()):
        row.button(f"Show {d} on “{name}”", on_click=_show, args=(d, name), type="primary" if i == 0 else "secondary",
                   key=f"switch_to_{d}", help=next(p.blurb for p in (*PRESETS, *LLM_PRESETS) if p.name == name))  # fmt: skip
    return False


def knob_row(names: list[str], rebuilds: str) -> None:
    """Side by side, a widget per sidebar setting in ``names``, as its knob declares it; moving one
    restarts the run."""
    for col, name in zip(st.columns(len(names)), names, strict=True):
        st.session_state[f"knob_{name}"] = st.session_state[f"ctl_{name}"]
        with col:
            knob_widget(name, key=f"knob_{name}", slider=True, on_change=_copy, args=(name,))
    st.caption(f"Moving a slider rebuilds {rebuilds} and restarts the run from the prompt.")


def drafter_knob_row(drafter: str) -> None:
    """The drafter's own knobs (not the run's main ones), if it has any."""
    if names := [n for n in method_knobs(drafter) if not KNOBS[n].main]:
        knob_row(names, f"the {drafter} drafter")


def text_tail(trace: Trace, cursor: int, keep: int = 160) -> None:
    """The text so far, the prompt cut to its last ``keep`` characters so the round stays in view."""
    if len(trace.prompt) > keep:
        st.caption(worded(f"… the prompt's first {len(trace.prompt) - keep} characters are not shown.", trace.vocab))
        trace = Trace(trace.settings, trace.vocab, trace.prompt[-keep:], trace.rounds)
    st.html(text_html(trace, cursor))
