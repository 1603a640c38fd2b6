"""Block verification's panel: the same draft scored under token-wise and block verification, and the
weights, stops and draws that decided it (specviz/charts/block.py)."""

import streamlit as st

from specviz import charts
from specviz.charts import block
from specviz.core.record import RoundRecord, worded
from ui.widgets import chart, table


def block_panel(r: RoundRecord, vocab: list[str]) -> None:
    """Nothing for a round the rule did not score (no draft, or another rule's round)."""
    if charts.same_draft(r) is None or not r.draft_tokens:
        return
    st.markdown(worded(block.summary(r), vocab), help=worded(charts.BLOCK_HELP, vocab))
    st.caption(worded(charts.BLOCK_EXPLAIN, vocab))
    table(block.block_frame(r, vocab), block.HELP, block.VIEW, vocab=vocab)
    chart(charts.block_figure(r, vocab), "block_both", vocab=vocab)
