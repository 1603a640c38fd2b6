"""Guided lesson: one real round in short steps. The page is ui/lesson.py."""

from ui.lesson import render

render()
