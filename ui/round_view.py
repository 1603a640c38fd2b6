"""What the step-through page draws for the round under the cursor: the text beside the round's
charts, then the KV cache, the running totals and the export buttons. Every figure comes from
specviz.charts; this file only lays them out."""

import streamlit as st

from specviz import charts
from specviz.charts import tries
from specviz.charts.verdict import PQ_WORDS
from specviz.core.markup import md
from specviz.core.record import RoundRecord, Trace, worded
from specviz.core.session import Session
from specviz.teaching.replay import replay_html
from specviz.teaching.stats import DEFINITIONS, acceptance_by_position, running_totals
from specviz.teaching.text_view import text_html
from ui.method_views import method_panels
from ui.widgets import chart, table


def totals(session: Session, key: str | None = None) -> None:
    """The running totals, a row of metrics (in a container with ``key``, for a page's CSS to size)."""
    rounds = session.rounds[: session.cursor]
    t = running_totals(rounds, session.generation.settings.k)
    vocab = session.generation.trace.vocab
    # A row that wraps: each figure keeps its width, so none is cut to "3..." on a projector.
    row = st.container(horizontal=True, gap="medium", key=key)
    for label, value, help in (
        ("Rounds", t["rounds"], DEFINITIONS["rounds"]),
        ("Tokens/forward", f"{t['tokens_per_forward']:.2f}", DEFINITIONS["tokens_per_forward"]),
        ("α (acceptance rate)", f"{t['acceptance_rate']:.1%}", DEFINITIONS["acceptance_rate"]),
        (worded("Characters", vocab), t["tokens"], DEFINITIONS["tokens"]),
        ("Expected/round", f"{t['expected_per_round']:.2f}", DEFINITIONS["expected_per_round"]),
        ("Measured/round", f"{t['tokens_per_forward']:.2f}", worded("Characters emitted per round so far.", vocab)),
    ):
        row.metric(label, value, help=worded(help, vocab), width="content")
    st.caption(f"{t['accepted']} of {t['tried']} checked draft {worded('characters', vocab)} accepted; "
               f"{t['reprefills']} context-window re-prefills (the window moved, so the KV cache, the keys and values "
               "the target stored per position, was rebuilt).")  # fmt: skip
    if rounds:
        chart(charts.acceptance_chart(acceptance_by_position(rounds)), "acceptance", vocab=vocab)


def sibling_tries(r: RoundRecord, vocab: list[str]) -> None:
    """The children of one node tried in turn, each against what the earlier rejections left."""
    st.markdown("**Several children of one node, tried in turn**")
    nodes = tries.multi_try_nodes(r)
    if not nodes:
        st.caption("No node had more than one child tried this round: at every node the first child tried was "
                   "accepted, or it was the only child.")  # fmt: skip
        return
    node = st.selectbox("Node", nodes, format_func=lambda n: tries.node_name(r, vocab, n), key=f"tries_{r.index}",
                        help=worded("A node whose children were tried one after another (the root is the last "
                                    "context character).", vocab))  # fmt: skip
    st.caption(md(tries.tries_sentence(r, vocab, node, r.draft_sampling)))
    table(tries.tries_frame(r, vocab, node), tries.HELP, tries.VIEW, vocab=vocab)


def pq_chart(r: RoundRecord, vocab: list[str], height: int | None = None) -> None:
    """p against q at one checked position, picked above the chart; it opens on the first rejected
    one. One chart, not a tab per position: each plotly chart costs a browser ~60 ms to redraw on
    every step (benchmarks/class_size.py), and hidden tabs are drawn too. ``height``: the chart's, in
    pixels, with the picker's label hidden (the chart's title names the position): the presenter
    layout's."""
    positions = r.positions
    first_rejected = next((i for i, p in enumerate(positions) if not p.accepted), 0)
    i = st.segmented_control(
        "Checked position: p against q",
        range(len(positions)),
        format_func=lambda i: f"depth {positions[i].depth}: '{md(charts.label(vocab, positions[i].token))}'",
        default=first_rejected,
        required=True,
        key=f"pq_position_{r.index}",
        wrap=True,  # every position whole at 1024 px, on as many lines as it takes
        help=worded(
            "The target's p and the draft's q over the vocabulary, at the drafted character picked here.", vocab
        ),
        label_visibility="visible" if height is None else "collapsed",
    )
    fig = charts.pq_bars(positions[i], vocab)
    chart(fig if height is None else fig.update_layout(height=height), "pq", vocab=vocab)
    st.caption(worded(f"{PQ_WORDS}.", vocab))


def heading(r: RoundRecord, vocab: list[str]) -> str:
    """The round's heading: what was accepted, and the character the target added."""
    verdict = f"{r.n_accepted} of {len(r.draft_tokens)} drafted accepted, " + (
        f"correction '{md(charts.label(vocab, r.correction))}'" if r.correction is not None
        else f"bonus '{md(charts.label(vocab, r.bonus))}'"
    )  # fmt: skip
    return f"Round {r.number}: {verdict}"


NO_DRAFT = "The drafter proposed nothing this round: the target's pass yields one character, as in plain decoding."


def checks(r: RoundRecord, vocab: list[str], max_rows: int | None = None) -> None:
    """The candidates checked this round, one row each; past ``max_rows`` they scroll inside the table."""
    frame = charts.checks_frame(r, vocab)
    height = "auto" if max_rows is None or len(frame) <= max_rows else ROW_PX * (max_rows + 1) + 2  # + the header
    table(frame, charts.checks_help(r), charts.checks_view(r), height, vocab=vocab)


ROW_PX = 35  # a dataframe row's height


def current_round(r: RoundRecord, session: Session) -> None:
    vocab = session.generation.trace.vocab
    st.subheader(heading(r, vocab))
    if r.k_choice is not None:
        chart(charts.k_choice_bars(r.k_choice), "k_choice", vocab=vocab)
    if not r.draft_tokens:
        st.info(worded(NO_DRAFT, vocab))
    else:
        checks(r, vocab)
        if tries.multi_try_nodes(r):  # a tree round where some node's children were tried in turn
            sibling_tries(r, vocab)
        pq_chart(r, vocab)
    round_details(r, session)


def round_details(r: RoundRecord, session: Session) -> None:
    """Below the checks: the method's panels, the residual or bonus, the trigram rows used."""
    vocab, settings = session.generation.trace.vocab, session.generation.settings
    with st.container(key="sv-panels"):  # benchmarks/screenshots.py scrolls to it
        method_panels(r, session.generation)
    if r.residual is not None:
        chart(charts.residual_bars(r, vocab), "residual", vocab=vocab)
    if r.bonus_p is not None:
        chart(charts.bonus_bars(r, vocab), "bonus", vocab=vocab)
    frame = charts.trigram_frame(r, vocab)
    if not frame.empty:
        st.markdown("**Trigram rows used** (fallback to the bigram row when the context's evidence is below "
                    f"min_context_count = {settings.min_context_count})")  # fmt: skip
        table(frame, charts.TRIGRAM_HELP, vocab=vocab)


def export(session: Session) -> None:
    trace = session.generation.trace
    shown = Trace(trace.settings, trace.vocab, trace.prompt, trace.rounds[: session.cursor])  # a snapshot
    row = st.container(horizontal=True, gap="small")  # wraps: each label whole at 1024 px
    c = [row] * 3
    # Deferred data: the trace is serialised only when the button is clicked.
    c[0].download_button("Download the trace (JSON)", data=trace.to_json, file_name="specviz-trace.json",
                         mime="application/json", on_click="ignore", key="export_json")  # fmt: skip
    c[1].download_button("Download the verified positions (CSV)", data=lambda: trace.positions_frame().to_csv(index=False),
                         file_name="specviz-positions.csv", mime="text/csv", on_click="ignore", key="export_csv")  # fmt: skip
    c[2].download_button("Download an offline copy (HTML)", data=lambda: replay_html(shown, "specviz replay"),
                         file_name="specviz-replay.html", mime="text/html", on_click="ignore", key="export_replay",
                         help="The rounds shown so far as one HTML file that steps through them with no server "
                              "and no network: open it from disk.")  # fmt: skip


def round_view(session: Session) -> None:
    trace, r = session.generation.trace, session.current
    left, right = st.columns([2, 3], gap="large")
    with left:
        st.html(text_html(trace, session.cursor))
        totals(session)
    with right:
        if r is None:
            st.info("No round yet: only the prompt so far. Press **Next** to run round 1.")
        else:
            current_round(r, session)
    if r is not None:
        kv_cache(r, session)
    export(session)


def kv_cache(r: RoundRecord, session: Session) -> None:
    st.subheader("KV cache")
    st.caption("KV: the keys and values the target stores for every position it has read, so that a later pass "
               "reads them instead of computing them again.")  # fmt: skip
    c = st.columns(2)
    with c[0]:
        chart(charts.kv_ledger(r), "kv_ledger", vocab=session.generation.trace.vocab)
    with c[1]:
        chart(
            charts.kv_timeline(session.rounds[: session.cursor], r.number),
            "kv_timeline",
            vocab=session.generation.trace.vocab,
        )
