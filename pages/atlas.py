"""Methods atlas: every drafter and rule side by side. The page is ui/atlas.py."""

from ui.atlas import render

render()
