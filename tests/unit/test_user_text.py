"""User and model text reaches the screen as text: one payload (conftest.PAYLOAD) through every
input path (URL parameters, prompts, uploaded file names and rows, model output that echoes the
prompt). Here generated strings through the escaping helpers and an uploaded row's chart; in
AppTest, tests/app/test_user_text_pages.py (the markdown sent is the escaped text); in chromium,
tests/browser/test_user_text_browser.py (what it shows is the literal characters)."""

import html
import re

from conftest import PAYLOAD, bench_row
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from specviz.charts.figure import MIN_FONT
from specviz.charts.shootout import speedup_bars
from specviz.core.markup import md, plotly_text

BENCH_ROW = bench_row()


def shown(markdown: str) -> str:
    """What CommonMark displays for ``markdown``: rendered, tags stripped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", MarkdownIt("commonmark").render(markdown))).strip()


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=60))
def test_md_shows_exactly_the_text(text):
    assert shown(f"x {md(text)} y") == f"x {text} y"


@given(st.text(alphabet="*_$:[]()<>&;`|#-!\\/ab \n", max_size=40))
def test_md_with_markup_characters(text):
    assert shown(f"x {md(text)} y") == f"x {text} y".replace("\n", "\u21b5")


@given(st.text(max_size=40))
def test_plotly_text_leaves_no_tag_or_entity(text):
    escaped = plotly_text(text)
    assert "<" not in escaped and html.unescape(escaped) == text


def test_uploaded_rows_become_escaped_chart_text():
    def unwrapped(title: str) -> str:  # the title's text: the chart breaks long lines at spaces, the second is a span
        return re.sub(r"</?span[^>]*>", "", title).replace("<br>", " ")

    fig = speedup_bars([BENCH_ROW | {"drafter": PAYLOAD}], f"{PAYLOAD}.jsonl")
    assert unwrapped(fig.layout.title.text) == plotly_text(f"{PAYLOAD}.jsonl")
    assert list(fig.data[0].y) == [plotly_text(PAYLOAD)]  # bars on their side
    both = speedup_bars([BENCH_ROW], f"{PAYLOAD}.jsonl", PAYLOAD)  # the second line is escaped too
    assert f"<span style='font-size:{MIN_FONT}px'>" in both.layout.title.text
    assert unwrapped(both.layout.title.text) == f"{plotly_text(PAYLOAD + '.jsonl')} {plotly_text(PAYLOAD)}"
