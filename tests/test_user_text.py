"""User and model text reaches the screen as text: one payload through every input path (URL
parameters, prompts, uploaded file names and rows, model output that echoes the prompt), in
AppTest (the markdown sent is the escaped text) and in a real browser (what chromium shows is
the literal characters), and generated strings through the escaping helpers."""

import html
import json
import re
from pathlib import Path

from conftest import wait_idle
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from models.tokenizer import UnknownCharactersError
from specviz.charts import label_text
from specviz.charts.shootout import speedup_bars
from specviz.core.engine import Generation
from specviz.core.markup import cut, md, plotly_text
from specviz.core.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
PAYLOAD = "**b** _i_ $x$ :smile: [l](javascript:alert(1)) &amp; <b>b</b> ` | # -"
# The payload's characters that Tiny Shakespeare's vocabulary has: what the model can echo.
ECHO = "$x$ :smile: &amp; -"
ECHO_PROMPT = (ECHO + "\n") * 6 + ECHO[:4]
BENCH_ROW = json.loads((ROOT / "docs" / "bench.jsonl").read_text().splitlines()[0])


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


def open_page(name: str, **params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=900)
    for k, v in params.items():
        at.query_params[k] = v
    at.switch_page(f"pages/{name}.py")
    at.run()
    assert not at.exception, at.exception
    return at


def test_url_parameters_and_prompt_show_as_text(target):
    at = open_page("step", k=PAYLOAD, temperature=PAYLOAD, drafter=PAYLOAD, preset=PAYLOAD)
    warnings = [w.value for w in at.sidebar.warning]
    assert len(warnings) == 4 and all(md(cut(PAYLOAD)) in w for w in warnings), warnings
    at = open_page("step", prompt=PAYLOAD)
    assert at.text_area(key="ctl_prompt").value == PAYLOAD  # a widget: literal
    unknown = UnknownCharactersError(target.tokenizer.unknown_chars(PAYLOAD))
    assert md(unknown) in at.error[0].value


def test_home_prompt_shows_as_text():
    at = open_page("home")
    at.text_area[0].set_value(PAYLOAD)
    next(b for b in at.button if b.label == "Generate").click()
    at.run()
    assert "\\*" in at.error[0].value and "The prompt has characters not in the vocabulary" in at.error[0].value


def test_model_output_echoing_the_prompt_shows_as_text(target):
    """The trie drafts what the prompt repeats: its headings quote the drafted text."""
    settings = Settings(drafter="trie", temperature=0.0, max_new_tokens=20)
    gen = Generation(target, target.tokenizer.encode(ECHO_PROMPT), settings)
    r = gen.step()
    assert set(label_text(target.tokenizer.chars, r.draft_tokens)) & set("$:&")  # the echo has markup characters
    at = open_page("tree", prompt=ECHO_PROMPT, drafter="trie", temperature="0", max_new_tokens="20")
    at.button(key="nav_next").click()
    at.run()
    heading = at.subheader[0].value
    assert md(label_text(target.tokenizer.chars, r.draft_notes["matched_prefix"])) in heading, heading


def test_uploaded_rows_become_escaped_chart_text():
    fig = speedup_bars([BENCH_ROW | {"drafter": PAYLOAD}], f"{PAYLOAD}.jsonl")
    assert fig.layout.title.text == plotly_text(f"{PAYLOAD}.jsonl") and list(fig.data[0].x) == [plotly_text(PAYLOAD)]
    both = speedup_bars([BENCH_ROW], f"{PAYLOAD}.jsonl", PAYLOAD)  # the second line is escaped too
    assert both.layout.title.text == f"{plotly_text(PAYLOAD + '.jsonl')}<br><sub>{plotly_text(PAYLOAD)}</sub>"


def test_payload_in_a_real_browser(app_url, page, tmp_path, target):
    """What chromium shows: the literal payload in the link warnings, the upload's error and
    chart, and the model's echo in the trie page's heading."""
    from urllib.parse import urlencode

    page.goto(f"{app_url}/step?{urlencode({'k': PAYLOAD, 'temperature': PAYLOAD})}")
    page.get_by_role("button", name="Next").wait_for(timeout=600_000)
    wait_idle(page)
    alerts = page.get_by_test_id("stAlert").all_inner_texts()
    assert sum(cut(PAYLOAD) in a for a in alerts) == 2, alerts
    assert page.locator("a[href^='javascript']").count() == 0 and page.locator(".katex").count() == 0

    page.goto(f"{app_url}/shootout")
    upload = page.get_by_test_id("stFileUploaderDropzoneInput")
    upload.wait_for(state="attached", timeout=600_000)
    wait_idle(page)
    row = json.dumps(BENCH_ROW | {"drafter": PAYLOAD})
    upload.set_input_files({"name": f"{PAYLOAD}.jsonl", "mimeType": "text/plain", "buffer": row.encode()})
    page.locator(".js-plotly-plot").first.wait_for(timeout=600_000)
    wait_idle(page)
    chart = page.locator(".js-plotly-plot").first
    assert chart.locator(".xtick text").first.text_content() == PAYLOAD
    assert chart.locator(".gtitle").text_content().startswith(f"{PAYLOAD}.jsonl")
    bad = json.dumps(BENCH_ROW | {"temperature": PAYLOAD[:20]})
    upload.set_input_files({"name": f"{PAYLOAD}.jsonl", "mimeType": "text/plain", "buffer": bad.encode()})
    page.get_by_text("is not a benchmark file").wait_for(timeout=600_000)
    error = page.get_by_test_id("stAlert").filter(has_text="is not a benchmark file").inner_text()
    assert error.startswith(f"{PAYLOAD}.jsonl is not a benchmark file") and json.dumps(PAYLOAD[:20]) in error

    page.goto(f"{app_url}/tree?{urlencode({'prompt': ECHO_PROMPT, 'drafter': 'trie', 'temperature': '0'})}")
    page.get_by_role("button", name="Next").wait_for(timeout=600_000)
    wait_idle(page)
    page.get_by_role("button", name="Next").click()
    wait_idle(page)
    gen = Generation(target, target.tokenizer.encode(ECHO_PROMPT), Settings(drafter="trie", temperature=0.0))
    r = gen.step()
    heading = page.get_by_role("heading", name=re.compile("^Round 1:")).inner_text()
    assert f"matched '{label_text(target.tokenizer.chars, r.draft_notes['matched_prefix'])}'" in heading, heading
