"""The offline replay: one HTML file that steps through a recorded run from file://, with no
server and no network, and shows user and model text as text."""

import json
import re

import pytest

from specviz.cli.main import main
from specviz.core.engine import Generation
from specviz.core.settings import Settings
from specviz.teaching.replay import replay_html

PROMPT = "ROMEO: $x$ &amp; :smile: &lt;b&gt;\n"  # markup a renderer might interpret


@pytest.fixture(scope="module")
def replay_file(tmp_path_factory):
    out = tmp_path_factory.mktemp("replay") / "run.html"
    args = ["replay", "--prompt", PROMPT, "--drafter", "trie", "--max-new-tokens", "60", "--out", str(out)]
    assert main(args) == 0
    return out


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


def test_replay_steps_from_disk_without_network(replay_file, browser):
    page = browser.new_page(viewport={"width": 1024, "height": 768})
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(replay_file.as_uri())
    assert page.locator("#heading").inner_text().startswith("Only the prompt")
    assert page.locator("#text").inner_text().startswith(PROMPT.replace("\n", "\u21b5"))  # literal characters
    page.get_by_role("button", name="Next").click()
    page.get_by_role("button", name="Next").click()
    page.keyboard.press("ArrowRight")
    assert re.match(r"Round 3 of \d+:", page.locator("#heading").inner_text())
    assert page.locator("#pos").inner_text().startswith("3 / ")
    page.locator(".chart .main-svg").first.wait_for()  # plotly drew the round's charts
    assert page.locator(".chart").count() >= 2
    page.get_by_role("button", name="Last").click()
    n = int(page.locator("#pos").inner_text().split(" / ")[1])
    assert page.locator("#pos").inner_text() == f"{n} / {n}"
    assert {u for u in requests} == {replay_file.as_uri()}
    page.close()


def test_replay_refuses_a_bad_output_up_front(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["replay", "--out", str(blocker / "run.html")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: cannot write")
