"""Trie and tree attention: the draft tree of any drafter that sends trees, round by round."""

import streamlit as st

from specviz.drafters import TREE_DRAFTERS
from ui.common import page_setup, question
from ui.controls import active_session
from ui.knobs import drafter_gate, knob_row
from ui.navigator import navigator
from ui.tree_view import tree_view

# The on-page sliders of each tree drafter that has some: (sidebar setting -> label, what they rebuild).
KNOBS = {
    "trie": ({"trie_n": "n (n-gram length)", "trie_prefix_len": "L_p (prefix length)",
              "trie_num_draft": "num_draft (tree size)"}, "the trie"),
    "distilled-tree": ({"distilled_context": "L (context)", "distilled_nodes": "node budget"}, "the draft tree"),
    "suffix": ({"suffix_max_match": "longest match", "suffix_min_prob": "min path probability",
                "suffix_max_nodes": "node budget"}, "the suffix indices' tree"),
    "medusa": ({"medusa_top_k": "candidates per head", "medusa_nodes": "node budget"}, "the candidate tree"),
}  # fmt: skip

# The preset where each tree drafter's trees are worth a look (any tree drafter not listed: "Dialogue").
DEMOS = {"trie": "Quote a passage", "suffix": "Repetitive", "distilled-tree": "Dialogue", "neural-tree": "Free verse"}


def render() -> None:
    page_setup()
    st.title("Trie and tree attention")
    question("How does the target check many continuations in one pass without mixing them up?")
    st.caption("A tree drafter sends several continuations at once, as a tree: flattened depth first into one forward "
               "pass, with a mask so each token sees only its own ancestors. The target then walks the tree from the "
               "root, trying a node's children in turn, and keeps one path.")  # fmt: skip
    if (session := active_session()) is not None and drafter_gate(
        session, {d: DEMOS.get(d, "Dialogue") for d in TREE_DRAFTERS}, "tree drafts and tree attention"
    ):
        if knobs := KNOBS.get(session.generation.settings.drafter):
            knob_row(*knobs)
        navigator(session, tree_view)
