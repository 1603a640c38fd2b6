"""The step page's presenter layout: one round on one projector screen (1024x768 with the sidebar
open). A one-line header, the navigator, the round's heading, then side by side the marked-up text
over the candidate table, and the p/q chart; the running totals in a compact row under them; the
rest of the round (the method's panels, the residual or bonus, the KV cache, the totals chart, the
exports) below, as in the full layout.

The three elements a class reads are in containers keyed sv-text, sv-checks and sv-pq
(CSS classes st-key-sv-*), for the browser test that checks they fit the screen."""

import streamlit as st

from specviz import charts
from specviz.charts import tries
from specviz.core.record import worded
from specviz.core.session import Session
from specviz.teaching.text_view import LEGEND, STYLE, text_body
from ui.round_view import (
    NO_DRAFT,
    checks,
    export,
    heading,
    kv_cache,
    pq_chart,
    round_details,
    sibling_tries,
    totals,
)
from ui.widgets import chart

TABLE_ROWS = 5  # candidates shown at once; a longer draft's rows scroll inside the table
PQ_HEIGHT = 280  # the p/q chart's height here, in pixels (its own is 300): what leaves it on screen

# Scoped to this layout: the page's margins, the header and the round's heading smaller, the metrics
# a compact row, and the text in a box of 4 lines that scrolls and opens at its end (a flex column
# in reverse starts scrolled to the bottom), so a long run keeps the table and chart in place. The
# text stays 15 px and the table 14 px: read from the back of a room.
CSS = """<style>
[data-testid="stMainBlockContainer"] { padding: 3rem 1.5rem 4rem; }
.st-key-sv-head h1 { font-size: 1.6rem; padding: 0; }
.st-key-sv-round h3 { font-size: 1.3rem; padding: 0; }
.st-key-sv-metrics [data-testid="stMetricValue"] { font-size: 1.25rem; }
.st-key-sv-metrics [data-testid="stMetric"] { padding: 0; }
.sv-scroll { display: flex; flex-direction: column-reverse; overflow-y: auto; max-height: 115px; }
</style>"""


def style() -> None:
    st.html(CSS)


def text_block(session: Session) -> None:
    trace = session.generation.trace
    with st.container(key="sv-text"):
        st.html(f'{STYLE}{LEGEND}<div class="sv-scroll" tabindex="0">{text_body(trace, session.cursor)}</div>')


def presenter_view(session: Session) -> None:
    trace, r = session.generation.trace, session.current
    vocab = trace.vocab
    if r is None:
        text_block(session)
        st.info("No round yet: only the prompt so far. Press **Next** to run round 1.")
        export(session)
        return
    with st.container(key="sv-round"):
        st.subheader(heading(r, vocab))
    left, right = st.columns(2, gap="medium")
    with left:
        text_block(session)
        if r.draft_tokens:
            with st.container(key="sv-checks"):
                checks(r, vocab, max_rows=TABLE_ROWS)
        else:
            st.info(worded(NO_DRAFT, vocab))
    with right:
        if r.draft_tokens:
            with st.container(key="sv-pq"):
                pq_chart(r, vocab, height=PQ_HEIGHT)
    totals(session, key="sv-metrics")
    if r.k_choice is not None:
        chart(charts.k_choice_bars(r.k_choice), "k_choice", vocab=vocab)
    with st.container(key="sv-details"):  # the rest of the round (benchmarks/screenshots.py scrolls to it)
        if r.draft_tokens and tries.multi_try_nodes(r):  # a tree round where some node's children were tried in turn
            sibling_tries(r, vocab)
        round_details(r, session)
    kv_cache(r, session)
    export(session)
