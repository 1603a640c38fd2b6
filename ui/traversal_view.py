"""The step page's panel for a traversal-verified round (specviz/verifiers/traversal.py): the
tries in order, leaves first (which node, its sequence ratio, alpha, the draw, where the traversal
went next), a chart of them, and this draft's expected kept tokens under both rules. Draws
nothing for a round of another verifier. Every figure comes from specviz.charts.traversal."""

import streamlit as st

from specviz.charts import traversal as charts
from specviz.core.record import RoundRecord, worded
from ui.widgets import chart, table


def traversal_view(r: RoundRecord, vocab: list[str]) -> None:
    if not charts.is_traversal(r) or not r.draft_tokens:
        return

    st.markdown(worded(charts.summary(r), vocab))
    st.caption(worded(charts.EXPLAIN, vocab))
    table(charts.traversal_frame(r, vocab), charts.HELP, vocab=vocab)
    chart(charts.traversal_figure(r, vocab), f"traversal_{r.index}", vocab=vocab)
