"""The offline replay in chromium: it steps through a recorded run from file://, with no server
and no network, and shows the prompt's markup as text."""

import re

import pytest

from specviz.cli.main import main

PROMPT = "ROMEO: $x$ &amp; :smile: &lt;b&gt;\n"  # markup a renderer might interpret


@pytest.fixture(scope="module")
def replay_file(tmp_path_factory):
    out = tmp_path_factory.mktemp("replay") / "run.html"
    args = ["replay", "--prompt", PROMPT, "--drafter", "trie", "--max-new-tokens", "60", "--out", str(out)]
    assert main(args) == 0
    return out


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
    assert page.locator("#totals").inner_text().startswith("So far: 3 rounds")
    if page.locator("#table table").count():  # a round that drafted: the candidate table, the step page's columns
        assert page.locator("#table th").first.inner_text() == "depth"
    page.get_by_role("button", name="Last").click()
    n = int(page.locator("#pos").inner_text().split(" / ")[1])
    assert page.locator("#pos").inner_text() == f"{n} / {n}"
    assert {u for u in requests} == {replay_file.as_uri()}
    page.close()
