"""Acceptance math: the speculative-sampling toy, no model. The page is ui/acceptance.py."""

from ui.acceptance import render

render()
