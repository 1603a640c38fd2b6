"""Exactness lab: is the output distributed exactly as the target's? The page is ui/exactness.py."""

from ui.exactness import render

render()
