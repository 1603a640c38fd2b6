"""Trie and tree attention: the draft tree of any drafter that sends trees, round by round."""

import streamlit as st

from specviz.drafters import drafter_class, drafter_names
from ui.common import page_setup, question
from ui.controls import active_session
from ui.knobs import drafter_gate, drafter_knob_row
from ui.navigator import navigator
from ui.tree_view import tree_view


def render() -> None:
    page_setup()
    st.title("Trie and tree attention")
    question("How does the target check many continuations in one pass without mixing them up?")
    st.caption("A tree drafter sends several continuations at once, as a tree: flattened depth first into one forward "
               "pass, with a mask so each token sees only its own ancestors. The target then walks the tree from the "
               "root, trying a node's children in turn, and keeps one path.")  # fmt: skip
    if (session := active_session()) is not None and drafter_gate(
        session, {d: drafter_class(d).preset for d in drafter_names(tree=True)}, "tree drafts and tree attention"
    ):
        drafter_knob_row(session.generation.settings.drafter)
        navigator(session, tree_view)
