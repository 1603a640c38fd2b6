"""NASD storage: how the n-gram storage grows round by round. The page is ui/nasd_page.py."""

from ui.nasd_page import render

render()
