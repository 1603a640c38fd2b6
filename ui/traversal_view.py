"""The step page's panel for a traversal-verified round (specviz/verifiers/traversal.py): the
tries in order, leaves first (which node, its sequence ratio, alpha, the draw, where the traversal
went next), a chart of them, and this draft's expected kept tokens under both rules. Draws
nothing for a round of another verifier. Every figure comes from specviz.charts.traversal."""

import streamlit as st

from specviz.charts import traversal as charts
from specviz.core.record import RoundRecord
from ui.widgets import chart, table


def traversal_view(r: RoundRecord, vocab: list[str]) -> None:
    if not charts.is_traversal(r) or not r.draft_tokens:
        return

    both = charts.both_rules(r)
    st.markdown(f"**The traversal, leaves first.** Expected kept tokens on this draft: **{both['lossless']:.2f}** "
                f"token-wise, **{both['traversal']:.2f}** with {r.verify_notes['rule']} verification, which kept "
                f"**{both['kept']}** this time.")  # fmt: skip
    st.caption(charts.EXPLAIN)
    table(charts.traversal_frame(r, vocab), charts.HELP)
    chart(charts.traversal_figure(r, vocab), f"traversal_{r.index}")
