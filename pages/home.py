"""Home: the race, what speculative decoding is, and where to start. The page is ui/home.py."""

from ui.home import render

render()
