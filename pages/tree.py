"""Trie and tree attention: the N-gram trie drafter round by round."""

import streamlit as st

from pages.common import page_setup
from pages.controls import active_session
from pages.knobs import drafter_gate, knob_row
from pages.navigator import navigator
from pages.tree_view import tree_view

page_setup()
st.title("Trie and tree attention")
st.caption("The trie drafter builds an n-gram trie from the prompt, matches the context's last L_p characters in it, "
           "and sends the most frequent continuations as a tree: flattened depth first, one forward pass, with a mask "
           "so each token sees only its own ancestors.")  # fmt: skip
if (session := active_session()) is not None and drafter_gate(session, "trie", "the N-gram trie and its tree drafts"):
    knob_row({"trie_n": "n (n-gram length)", "trie_prefix_len": "L_p (prefix length)",
              "trie_num_draft": "num_draft (tree size)"}, "the trie")  # fmt: skip
    navigator(session, tree_view)
