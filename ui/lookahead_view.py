"""The step page's lookahead panel (specviz/drafters/lookahead.py): the Jacobi window that rode in
the round's verify pass, the pool's candidates for the root, how far the verified branch went, and
what sampling costs. Draws nothing for another drafter's round. Every figure comes from
specviz.charts.lookahead."""

import pandas as pd
import streamlit as st

from specviz.charts import label
from specviz.charts import lookahead as charts
from specviz.core.markup import md
from specviz.core.record import RoundRecord
from ui.widgets import chart, table

HELP = {
    "n-gram": "The candidate: the root (the last character), then up to N - 1 characters the pool says followed it.",
    "source": "Where the pool got the n-gram: the prompt (seeded at the start) or a column of the Jacobi window.",
    "accepted": "How many of its characters after the root the round accepted (candidates sharing a prefix were "
    "verified as one tree branch).",
}


def lookahead_panel(r: RoundRecord, vocab: list[str]) -> None:
    if not charts.is_lookahead(r):
        return

    n, update = r.draft_notes, r.drafter_update
    root = md(label(vocab, n["window"][0][0]))
    st.markdown("**Lookahead decoding: the Jacobi window and the n-gram pool**")
    st.caption(f"Besides the root and the {len(r.draft_tokens)} candidate nodes, this round's verify pass ran "
               f"{len(r.extra_tokens)} window cells ({r.kv_after_verify - r.kv_before} KV entries written; the "
               "window's are scratch: only the root and the accepted path are kept). The window holds the last "
               f"N - 1 = {len(n['window'])} Jacobi steps (levels) of W = {n['W']} columns; cell (level j, column i) "
               "guesses the character at offset j + i and sees the root, level 0 up to its column and its own "
               "column below it. No candidate attends to a window cell, so verification is exactly as without it.")  # fmt: skip
    chart(charts.window_figure(r, vocab), "lookahead_window", vocab=vocab)
    rows = charts.candidate_rows(r, vocab)
    st.caption(f"The pool holds {n['pool_size']} n-grams under {n['pool_keys']} first characters (at most "
               f"G = {n['G']} each); {len(rows)} start with the root '{root}'.")  # fmt: skip
    if rows:
        table(pd.DataFrame(rows), HELP, vocab=vocab)
        best = max(rows, key=lambda row: row["accepted"])
        if best["accepted"]:
            st.caption(f"Verified branch: '{md(best['n-gram'])}' ({best['source']}) got {best['accepted']} "
                       f"character(s) accepted of {len(best['n-gram']) - 1}.")  # fmt: skip
        else:
            st.caption("Verified branch: no candidate's first character was accepted this round.")
    else:
        st.caption("No n-gram in the pool starts with the root: nothing to verify; "
                   + ("the pass still ran the window." if r.extra_tokens else "and with adaptive K the window did not "
                      "run either (alone it is a wide pass for one token); it moves on with the text."))  # fmt: skip
    cost = charts.sampling_cost(r)
    if cost["greedy_guesses"]:
        st.caption(f"What sampling costs: {cost['greedy_guesses']} candidate(s) tried were the target's own greedy "
                   "choice. At T = 0 each would be accepted; at this temperature a one-hot candidate is accepted "
                   f"with probability p(x), here {cost['mean_accept']:.2f} on average ({cost['accepted']} "
                   "accepted).")  # fmt: skip
    if "collected" in update:
        st.caption(f"After the pass: {len(update['collected'])} n-grams read off the window's columns, "
                   f"{update['new']} new to the pool; the window moved on by {update['shift']}.")  # fmt: skip
