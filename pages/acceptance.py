"""Acceptance math: the seed's toy, no model. The page is ui/acceptance.py."""

from ui.acceptance import render

render()
