"""Drafter shoot-out: every drafter, timed in one run. The page is ui/shootout.py."""

from ui.shootout import render

render()
