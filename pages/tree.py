"""Trie and tree attention: the draft tree, round by round. The page is ui/tree_page.py."""

from ui.tree_page import render

render()
