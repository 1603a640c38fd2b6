"""The medusa drafter's panel on the step page: each head's top-k with its probabilities, and the
candidate tree they make (the sparse tree: the paths with the highest product of head
probabilities, within the node budget). Drawn for the rounds of a drafter that names it
(MedusaDrafter.panels); draws nothing for a round whose notes hold no heads (a skipped round, an
adaptive-K idle round)."""

import streamlit as st

from specviz.charts.draft_tree import draft_tree_figure
from specviz.charts.medusa import heads_figure
from specviz.core.record import RoundRecord
from ui.widgets import chart


def medusa_panel(r: RoundRecord, vocab: list[str]) -> None:
    notes = r.draft_notes
    if "heads" not in notes:  # no heads read this round
        return

    st.markdown(f"**Medusa heads.** Every head read the target's top-layer feature at context position "
                f"{notes['feature_entry']} (the character before the root), which the last verify pass wrote: "
                "no extra target pass. Head i guesses the character i steps after the root; "
                + (f"the tree keeps the {len(r.draft_tokens)} paths (budget {notes['nodes']}) with the highest "
                   "product of head probabilities." if notes.get("shape") != "sequoia" else
                   f"the tree has Sequoia's fixed shape for the budget of {notes['nodes']} nodes, each node's "
                   "children its head's top characters by rank."))  # fmt: skip
    left, right = st.columns(2)
    with left:
        chart(heads_figure(notes, vocab), f"medusa_heads_{r.index}", vocab=vocab)
    with right:
        chart(draft_tree_figure(r, vocab, notes["root"]), f"medusa_tree_{r.index}", vocab=vocab)
