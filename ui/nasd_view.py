"""What the NASD page draws for the round under the cursor: how the round's draft was looked up,
what the round taught the storage, and the storage's growth and drafts over the rounds so far.
Every figure comes from specviz.charts.nasd."""

import streamlit as st

from specviz.charts import label_text
from specviz.charts import nasd as charts
from specviz.core.markup import md
from specviz.core.record import RoundRecord
from specviz.core.session import Session
from ui.knobs import text_tail
from ui.widgets import chart, table


def _headline(r: RoundRecord, vocab: list[str], state: dict) -> tuple[str, str]:
    """(heading, detail) for the round."""
    drafted = label_text(vocab, r.draft_tokens)
    draft = f"drafted '{md(drafted)}'" if drafted else "drafted nothing"
    if r.draft_notes.get("stopped_unknown"):
        draft += " (unknown context)"
    added = r.drafter_update.get("added", [])
    new = sum(e != "count + 1" for e in state["effects"])
    return (f"Round {r.number}: {draft}, accepted {r.n_accepted}; learned {len(added)} counts",
            f"Of the {len(added)} counts added after the round, {new} made a new (context → token) entry; the storage "
            f"now holds {sum(state['entries'].values())} entries in {state['contexts']} contexts.")  # fmt: skip


def nasd_view(session: Session) -> None:
    gen, r, cursor = session.generation, session.current, session.cursor
    s, vocab, trace = gen.settings, gen.trace.vocab, gen.trace
    states = charts.storage_growth(gen.drafter.rows(), session.rounds)[: cursor + 1]
    if r is None:
        st.info(f"Before round 1: the storage holds every {s.nasd_n}-gram of the prompt: {states[0]['contexts']} contexts "
                f"of {s.nasd_n - 1} characters, {sum(states[0]['entries'].values())} (context → next character) "
                "entries. Press **Next** to draft from it.")  # fmt: skip
    else:
        heading, detail = _headline(r, vocab, states[-1])
        st.subheader(heading)
        st.caption(detail)
    left, right = st.columns([2, 3], gap="large")
    with left:
        text_tail(trace, cursor)
        st.caption(f"n = {s.nasd_n}: the last {s.nasd_n - 1} characters are the context. filler_top_k = "
                   f"{s.nasd_filler_top_k}: after each round the storage counts the emitted characters"
                   + (f" and the target's other top {s.nasd_filler_top_k} characters." if s.nasd_filler_top_k > 1
                      else " only (raise filler_top_k to add the target's top alternatives too).")
                   + (" An unknown context ends the draft." if s.nasd_stop_if_unknown
                      else " An unknown context is bridged with the commonest character."))  # fmt: skip
    with right:
        chart(charts.growth_figure(states, r.number if r is not None else None), "nasd_growth")
    if r is not None:
        # One under the other, each the page's width: side by side at 1024 px, each had ~250 px for ~500
        st.markdown("**How the draft was made** (one storage lookup per drafted character)")
        table(charts.lookups_frame(r, vocab), charts.LOOKUPS_HELP, vocab=vocab)
        st.markdown("**What the storage learned after the round**")
        table(charts.added_frame(r, states[-1]["effects"], vocab), charts.ADDED_HELP, vocab=vocab)
        rounds = session.rounds[:cursor]
        chart(charts.drafts_figure(rounds, r.number), "nasd_drafts")
        with st.expander("Every draft so far"):
            table(charts.drafts_frame(rounds, vocab), vocab=vocab)
    with st.expander(f"The storage after the newest computed round ({len(session.rounds)})"):
        table(charts.storage_frame(gen.drafter.rows(), vocab), vocab=vocab)
