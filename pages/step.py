"""Step through: one speculative round at a time. The page is ui/step.py."""

from ui.step import render

render()
