"""What the trie page draws for the round under the cursor: the trie around the matched prefix,
the pruned draft tree, its depth-first flattening, the tree attention mask, the accepted path and
the KV cache entries gathered along it. Every figure comes from specviz.charts.tree.

Before the first round the page previews the draft the first round will send: the trie drafter
is deterministic and keeps no state, so drafting from the prompt here changes nothing.
"""

import streamlit as st
import torch

from pages.knobs import text_tail
from pages.round_view import chart
from specviz.charts import candidate_frame, label, label_text
from specviz.charts import tree as charts
from specviz.engine import Session
from specviz.markup import md
from specviz.record import RoundRecord


def _first_draft(session: Session) -> dict:
    """The draft notes of round 0, computed or about to be (same depth limit as the engine)."""
    if session.rounds:
        return session.rounds[0].draft_notes
    gen = session.generation  # before its first round: its tokens are the prompt
    return gen.drafter.draft(list(gen.tokens), gen.draft_limit, gen.settings.temperature, torch.Generator()).notes


def _headline(r: RoundRecord, vocab: str, s) -> tuple[str, str]:
    """(heading, detail) for the round."""
    notes = r.draft_notes
    end = (
        f"correction '{md(label(vocab, r.correction))}'"
        if r.correction is not None
        else f"bonus '{md(label(vocab, r.bonus))}'"
    )
    if not notes["matched_prefix"]:
        return (f"Round {r.index}: no match, no draft; {end}",
                f"No suffix of the context (up to L_p = {s.trie_prefix_len} characters) is a chain in the trie, so "
                "nothing is drafted and the target adds one character, as in plain decoding.")  # fmt: skip
    prefix = md(label_text(vocab, notes["matched_prefix"]))
    if not r.draft_tokens:
        return (f"Round {r.index}: matched '{prefix}', nothing below it; {end}",
                "The matched node is a leaf: nothing followed it in the prompt, so nothing is drafted.")  # fmt: skip
    return (f"Round {r.index}: matched '{prefix}', drafted {len(r.draft_tokens)}, accepted {r.n_accepted}; {end}",
            f"The context's last {notes['matched_length']} characters (of L_p = {s.trie_prefix_len}) matched; the "
            f"draft keeps the {len(r.draft_tokens)} most frequent of the {notes['pruned_from']} nodes below the match "
            f"(num_draft = {s.trie_num_draft}, at most K = {s.k} deep).")  # fmt: skip


def tree_view(session: Session) -> None:
    gen, r = session.generation, session.current
    s, vocab, trace = gen.settings, gen.trace.vocab, gen.trace
    notes = r.draft_notes if r is not None else _first_draft(session)
    if r is None:
        st.info("Round 0: the trie is built from the prompt. Highlighted: the prefix the first round will match and "
                "the draft tree it will send. Press **Next** to send it to the target.")  # fmt: skip
    else:
        heading, detail = _headline(r, vocab, s)
        st.subheader(heading)
        st.caption(detail)
    left, right = st.columns([2, 3], gap="large")
    with left:
        text_tail(trace, session.cursor)
        c = st.columns(2)
        c[0].slider("Levels drawn below the match", 1, 16, 6, key="tree_levels")
        c[1].slider("Most trie nodes drawn", 20, 400, 80, step=10, key="tree_max_nodes",
                    help="The trie can hold thousands of nodes: the chart draws the most frequent ones below the "
                    "match. Zoom with the mouse; double-click to zoom out.")  # fmt: skip
    with right:
        fig = charts.trie_figure(gen.drafter.trie.nodes(), vocab, notes["matched_prefix"], notes["tree"],
                                 r.accepted_path if r is not None else [], st.session_state.tree_levels,
                                 st.session_state.tree_max_nodes)  # fmt: skip
        chart(fig, "trie")
    if r is None or not r.draft_tokens:
        return
    root = trace.root(r)
    chart(charts.flattening_figure(r, vocab, root), "flattening")
    chart(charts.kv_gather_figure(r, vocab, root), "kv_gather")
    c = st.columns([3, 2], gap="large")
    with c[0]:
        chart(charts.mask_figure(r, vocab, root), "tree_mask")
    with c[1]:
        st.markdown("**The target's checks, in the order it made them**")
        st.caption("Depth first: a child is checked only after its parent is accepted; after a rejection the "
                   "next sibling is tried against the residual.")  # fmt: skip
        st.dataframe(candidate_frame(r, vocab), hide_index=True)
