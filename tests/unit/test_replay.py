"""The offline replay: one HTML file that holds every round of a recorded run and shows user and
model text as text; tests/browser/test_replay_browser.py steps through it from file://, with no
server and no network."""

import html
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


def test_the_file_carries_each_rounds_candidates_and_the_running_totals(target):
    """A teacher can use the file in place of the server: the step page's candidate table per round (its
    columns, escaped) and the running totals up to that round."""
    from specviz.charts import candidate_frame
    from specviz.teaching.stats import running_totals

    echo = "$x$ &amp; <b>\n" * 4  # markup the model may echo, drafted back by the trie
    ids = target.tokenizer.encode(echo.replace("<", "").replace(">", ""))
    trace = Generation(target, ids, Settings(drafter="trie", temperature=0.0, max_new_tokens=30)).run()
    data = embedded(replay_html(trace))
    drafted = next(i for i, r in enumerate(trace.rounds) if r.positions)
    table = data["rounds"][drafted]["table"]
    assert all(f"<th>{html.escape(c)}</th>" in table for c in candidate_frame(trace.rounds[drafted], trace.vocab))
    assert table.count("<tr") == len(trace.rounds[drafted].positions) + 1  # the header and one row per check
    assert "None" not in table and "nan" not in table
    assert "<b>" not in "".join(r["table"] for r in data["rounds"])
    last = running_totals(trace.rounds, trace.settings["k"])
    assert data["rounds"][-1]["totals"].startswith(f"So far: {last['rounds']} rounds, {last['tokens']} characters")
    assert f"({last['accepted']} of {last['tried']} checked drafts accepted)" in data["rounds"][-1]["totals"]
    assert data["totals"].startswith("So far: 0 rounds")


def test_replay_refuses_a_bad_output_up_front(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["replay", "--out", str(blocker / "run.html")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: cannot write")
