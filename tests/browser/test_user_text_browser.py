"""User and model text in chromium: what it shows is the literal characters."""

import json
import re

from conftest import ECHO_PROMPT, PAYLOAD, bench_row, goto, next_round, wait_idle

from specviz.charts import label_text
from specviz.core.engine import Generation
from specviz.core.markup import cut
from specviz.core.settings import Settings

BENCH_ROW = bench_row()


def test_payload_in_a_real_browser(app_url, page, tmp_path, target):
    """What chromium shows: the literal payload in the link warnings, the upload's error and
    chart, and the model's echo in the trie page's heading."""
    from urllib.parse import urlencode

    goto(page, f"{app_url}/step?{urlencode({'k': PAYLOAD, 'temperature': PAYLOAD})}")
    alerts = page.get_by_test_id("stAlert").all_inner_texts()
    assert sum(cut(PAYLOAD) in a for a in alerts) == 2, alerts
    assert page.locator("a[href^='javascript']").count() == 0 and page.locator(".katex").count() == 0

    page.goto(f"{app_url}/shootout")
    upload = page.get_by_test_id("stFileUploaderDropzoneInput")
    upload.wait_for(state="attached", timeout=600_000)
    wait_idle(page, started=True)
    row = json.dumps(BENCH_ROW | {"drafter": PAYLOAD})
    upload.set_input_files({"name": f"{PAYLOAD}.jsonl", "mimeType": "text/plain", "buffer": row.encode()})
    page.locator(".js-plotly-plot").first.wait_for(timeout=600_000)
    wait_idle(page, started=True)
    chart = page.locator(".js-plotly-plot").first
    assert chart.locator(".ytick text").first.text_content() == PAYLOAD  # the bars lie on their side
    title = chart.locator(".gtitle").text_content()  # wrapped into lines: compare without the line breaks' spaces
    assert "".join(title.split()).startswith("".join(f"{PAYLOAD}.jsonl".split())), title
    bad = json.dumps(BENCH_ROW | {"temperature": PAYLOAD[:20]})
    upload.set_input_files({"name": f"{PAYLOAD}.jsonl", "mimeType": "text/plain", "buffer": bad.encode()})
    page.get_by_text("is not a benchmark file").wait_for(timeout=600_000)
    error = page.get_by_test_id("stAlert").filter(has_text="is not a benchmark file").inner_text()
    assert error.startswith(f"{PAYLOAD}.jsonl is not a benchmark file") and json.dumps(PAYLOAD[:20]) in error

    goto(page, f"{app_url}/tree?{urlencode({'prompt': ECHO_PROMPT, 'drafter': 'trie', 'temperature': '0'})}")
    next_round(page)
    gen = Generation(target, target.tokenizer.encode(ECHO_PROMPT), Settings(drafter="trie", temperature=0.0))
    r = gen.step()
    heading = page.get_by_role("heading", name=re.compile("^Round 1:")).inner_text()
    assert f"matched '{label_text(target.tokenizer.chars, r.draft_notes['matched_prefix'])}'" in heading, heading
