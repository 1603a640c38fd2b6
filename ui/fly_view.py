"""FLy's panel on the step page: the entropy gate and the deferred window, position by position
(specviz/charts/fly.py)."""

import streamlit as st

from specviz.charts.fly import fly_figure, outcomes
from specviz.core.record import RoundRecord, worded
from ui.widgets import chart


def fly_panel(r: RoundRecord, vocab: list[str]) -> None:
    """Nothing for a round FLy did not check (no draft, or another rule's notes)."""
    if not r.positions or "deferred" not in r.verify_notes:
        return
    kept = outcomes(r).count("kept (deferred)")
    st.caption(worded(f"LOSSY: FLy kept {kept} drafted character{'s' * (kept != 1)} the usual test rejected this "
                      "round. A kept character comes out more often than the target's p says: the Exactness lab "
                      "calls the rule biased at every temperature above 0.", vocab))  # fmt: skip
    chart(fly_figure(r, vocab), "fly_gate", vocab=vocab)
