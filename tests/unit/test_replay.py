"""The offline replay: one HTML file that holds every round of a recorded run and shows user and
model text as text; tests/browser/test_replay_browser.py steps through it from file://, with no
server and no network."""

import json
import re

from specviz.cli.main import main
from specviz.core.engine import Generation
from specviz.core.settings import Settings
from specviz.teaching.replay import replay_html

PROMPT = "ROMEO: $x$ &amp; :smile: &lt;b&gt;\n"  # markup a renderer might interpret


def embedded(page: str) -> dict:
    return json.loads(re.search(r"const DATA = (.*?);\n", page).group(1))


def test_the_file_holds_every_round_and_no_raw_markup(target):
    trace = Generation(target, target.tokenizer.encode(PROMPT), Settings(drafter="trie", max_new_tokens=40)).run()
    page = replay_html(trace)
    data = embedded(page)
    assert len(data["rounds"]) == len(trace.rounds) and all(r["figures"] for r in data["rounds"])
    assert data["rounds"][0]["heading"].startswith(f"Round 1 of {len(trace.rounds)}:")
    script = page[page.index("const DATA") :]
    assert "<" not in script.split(";\n", 1)[0]  # the embedded JSON escapes <, so no text can end the script
    assert ">&amp;</span>" in data["prompt"] and "<b>" not in data["prompt"]  # every character escaped


def test_replay_refuses_a_bad_output_up_front(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["replay", "--out", str(blocker / "run.html")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: cannot write")
