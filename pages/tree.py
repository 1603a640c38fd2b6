"""Trie and tree attention: the N-gram trie drafter round by round."""

import streamlit as st

from pages.common import page_setup
from pages.controls import HELP, active_session
from pages.knobs import drafter_gate, knob
from pages.navigator import navigator
from pages.tree_view import tree_view

page_setup()
st.title("Trie and tree attention")
st.caption("The trie drafter builds an n-gram trie from the prompt, matches the context's last L_p characters in it, "
           "and sends the most frequent continuations as a tree: flattened depth first, one forward pass, with a mask "
           "so each token sees only its own ancestors.")  # fmt: skip
if (session := active_session()) is not None and drafter_gate(session, "trie", "the N-gram trie and its tree drafts"):
    c = st.columns(3)
    with c[0]:
        knob("trie_n", "n (n-gram length)", HELP["trie_n"])
    with c[1]:
        knob("trie_prefix_len", "L_p (prefix length)", HELP["trie_prefix_len"])
    with c[2]:
        knob("trie_num_draft", "num_draft (tree size)", HELP["trie_num_draft"])
    st.caption("Moving a slider rebuilds the trie and restarts the run from the prompt.")
    navigator(session, tree_view)
