"""Why does speculation get slower on a busy server? The page is ui/load.py."""

from ui.load import render

render()
