"""One file over 300 lines because pytest reads shared fixtures from conftest.py alone.

Shared by the tests of every kind (tests/unit, tests/app, tests/browser, tests/statistical): the
shipped checkpoints (float32, loaded once per test session and never mutated;
tests/unit/test_engine.py overrides them with float64 copies), the checks and data that tests of
more than one kind share, and for the real-browser tests one `streamlit run app.py` per test
session on a free local port and a Playwright page in Debian's chromium (/usr/bin/chromium).

The browser tests fail (they do not skip) when chromium or playwright is missing: .ci/run
installs chromium with apt-get, and playwright is in requirements-dev.txt."""

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
CHROMIUM = os.environ.get("SPECVIZ_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]  # fmt: skip


def pytest_configure(config):
    """Tests keep their disk cache (specviz/core/diskcache.py) apart from the app's: the kernels they
    build are the same, but a cost curve measured while tests load the machine would price the app's
    drafts as passes cost then. Set here, before any test imports specviz, and inherited by the
    servers the browser tests start."""
    os.environ.setdefault("SPECVIZ_CACHE", str(ROOT / ".cache" / "tests"))


def app_pages() -> list[str]:
    """Every page the router (app.py) lists, by URL path ("" for Home): the browser tests visit a page added
    there without an edit of theirs."""
    import re

    return ["", *re.findall(r'url_path="([^"]+)"', APP.read_text())]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Markers by folder (registered in pyproject.toml): every test in tests/browser/ drives chromium or a
# `streamlit run` server, and every test in tests/statistical/ runs the real target thousands of times.
# The quick loop, pytest -m "not browser and not slow", leaves both out; plain pytest runs everything.
FOLDER_MARKS = {"browser": ("browser",), "statistical": ("slow",)}


def pytest_collection_modifyitems(items):
    here = Path(__file__).parent
    for item in items:
        folder = item.path.relative_to(here).parts[0] if item.path.is_relative_to(here) else ""
        for mark in FOLDER_MARKS.get(folder, ()):
            item.add_marker(mark)


def _checkpoint(name: str, float64: bool = False):
    # Imported here, not at the top: benchmarks/app_speed.py imports this file and times the
    # app's first load, torch's import included.
    import torch

    from models.checkpoint import load_checkpoint

    return load_checkpoint(name, dtype=torch.float64 if float64 else torch.float32)


@pytest.fixture(scope="session")
def target():
    return _checkpoint("target")


@pytest.fixture(scope="session")
def tiny():
    return _checkpoint("tiny")


@pytest.fixture(scope="session")
def target64():
    """float64 copies, for the tests that claim exact equality."""
    return _checkpoint("target", float64=True)


@pytest.fixture(scope="session")
def tiny64():
    return _checkpoint("tiny", float64=True)


# A prompt long enough that a short greedy run crosses block_size (256), so the window jumps and the
# cache is prefilled again: the greedy-equality tests run every drafter past it in 150 tokens.
GREEDY_TEXT = ("ROMEO:\nBut soft, what light through yonder window breaks?\nIt is the east, and Juliet is the sun.\n"
               "Arise, fair sun, and kill the envious moon,\nWho is already sick and pale with grief,\n")  # fmt: skip
GREEDY_TOKENS = 150


@pytest.fixture(scope="session")
def greedy(target64):
    """The baseline's greedy run after GREEDY_TEXT (float64), past block_size: run once per test
    process, compared with every drafter."""
    from specviz.core.engine import Generation
    from specviz.core.settings import Settings

    prompt = target64.tokenizer.encode(GREEDY_TEXT)
    return Generation(target64, prompt, Settings(drafter="none", temperature=0, max_new_tokens=GREEDY_TOKENS)).run()


def assert_plain_greedy(ckpt, prompt: list[int], new: list[int]) -> int:
    """``new`` is plain greedy decoding after ``prompt``: every token is the argmax of the reference
    module run from scratch, no cache, over its window (specviz.kernels.cached_model.window_start); by
    induction from the prompt, that is the text greedy decoding writes. Tokens that share a window
    start are checked by one pass over that window (a causal pass's row j sees the tokens up to j).
    -> how many windows the text spans"""
    import torch

    from specviz.core.target import window_start

    tokens, by_start = prompt + new, {}
    for t in range(len(prompt), len(tokens)):
        by_start.setdefault(window_start(t, ckpt.config.block_size), []).append(t)
    with torch.no_grad():
        for s, ts in by_start.items():
            logits, _ = ckpt.model(torch.tensor([tokens[s : ts[-1]]]), torch.arange(ts[-1] - s))  # (1, T, V)
            want = logits[0, [t - 1 - s for t in ts]].argmax(-1).tolist()
            assert [tokens[t] for t in ts] == want, f"not greedy in the window from {s}"
    return len(by_start)


def assert_training_resumes(args: list[str], tmp_path: Path, monkeypatch, state: str) -> None:
    """A head's training (`python -m specviz <args>`) interrupted right after it kept its resume state and run
    again from --resume-dir ends with the same file as an uninterrupted run, and removes its state (files
    matching ``state``) once the file is written. Shared by train-eagle's, train-mtp's and train-dflash's tests."""
    import torch
    from safetensors.torch import load_file

    from specviz.cli import main as cli
    from specviz.training.train import HeadResume

    assert cli.main([*args, "--out", str(tmp_path / "a.safetensors"), "--resume-dir", str(tmp_path / "ra")]) == 0
    real = HeadResume.save

    def stop_after_saving(self, it, elapsed):
        real(self, it, elapsed)
        raise KeyboardInterrupt  # interrupted right after the state at the first eval was kept

    monkeypatch.setattr(HeadResume, "save", stop_after_saving)
    b = ["--out", str(tmp_path / "b.safetensors"), "--resume-dir", str(tmp_path / "rb")]
    with pytest.raises(KeyboardInterrupt):
        cli.main([*args, *b])
    monkeypatch.setattr(HeadResume, "save", real)
    assert cli.main([*args, *b]) == 0
    a, b = load_file(tmp_path / "a.safetensors"), load_file(tmp_path / "b.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert not list((tmp_path / "rb").glob(state))


# Exactness checks, shared by the tiny model's (tests/unit/test_exactness.py) and the real
# target's (tests/statistical/test_exactness_real_target.py): the prompt, the significance level,
# the lossless paths both test, and what a lossless result must show.
EXACTNESS_PROMPT = "the cat sat on the mat.\nthe cat sat on the"  # repeats: every n-gram drafter has drafts
EXACTNESS_ALPHA = 0.001
LOSSLESS = [
    ("bigram", "sampled chain"),
    ("trigram", "sampled chain"),
    ("prompt-lookup", "deterministic chain"),
    ("nasd", "deterministic chain"),
    ("trie", "deterministic tree"),
]


def check_lossless(res, what: str) -> None:
    from specviz.teaching.exactness import verdict

    assert res.new_tokens == res.k + 1 and res.draft_depths == res.k
    assert res.joint.dof >= 5 * res.new_tokens and res.first.dof >= 5, "too few populated outcomes"
    assert res.impossible == 0
    assert res.p_value >= EXACTNESS_ALPHA, f"{what}: p={res.p_value:.2e} (joint {res.joint}, first {res.first})"
    assert verdict(res, EXACTNESS_ALPHA)[0] == "exact"


def lesson_trace(target, settings, text: str):
    """The guided lesson's rounds for ``text`` (as specviz.teaching.lesson picks them), for its unit
    and AppTest tests."""
    from specviz.core.engine import Generation
    from specviz.teaching import lesson

    gen = Generation(target, target.tokenizer.encode(text), settings)
    while len(gen.trace.rounds) < lesson.MAX_ROUNDS and not gen.done and not lesson.enough(gen.trace.rounds):
        gen.step()
    return gen.trace


# User text: one payload through every input path, in the unit, AppTest and browser tests of
# test_user_text*.py.
PAYLOAD = "**b** _i_ $x$ :smile: [l](javascript:alert(1)) &amp; <b>b</b> ` | # -"
# The payload's characters that Tiny Shakespeare's vocabulary has: what the model can echo.
ECHO = "$x$ :smile: &amp; -"
ECHO_PROMPT = (ECHO + "\n") * 6 + ECHO[:4]


def bench_row() -> dict:
    """The first row of the shipped benchmark file (docs/bench.jsonl)."""
    import json

    return json.loads((ROOT / "docs" / "bench.jsonl").read_text().splitlines()[0])


# AppTest (tests/app): the app run by Streamlit's test harness, no server and no browser. Streamlit
# is imported inside: benchmarks/app_speed.py imports this file and times the app's first load.


def app_test(timeout: int = 900):
    """The app (app.py) in AppTest, not run yet; ``timeout``: seconds each run may take."""
    from streamlit.testing.v1 import AppTest

    return AppTest.from_file(str(APP), default_timeout=timeout)


def open_page(path: str, query: dict | None = None, timeout: int = 900):
    """The app opened on ``path`` (pages/<name>.py) by a link with ``query``, run once without an exception."""
    at = app_test(timeout)
    at.query_params.update(query or {})
    at.switch_page(path)
    at.run()
    assert not at.exception, at.exception
    return at


def rerun(at):
    """Run the script again (after a widget change) and check it raised nothing."""
    at.run()
    assert not at.exception, at.exception
    return at


def click(at, key: str):
    """Click the button ``key`` and check the rerun raised nothing."""
    at.button(key=key).click().run()
    assert not at.exception, at.exception
    return at


def chart_specs(at) -> list[dict]:
    """Every plotly chart on the page, as its figure's JSON."""
    import json

    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


# The real browser (tests/browser): one server per test session, chromium through Playwright.


@contextlib.contextmanager
def streamlit_server(log: Path):
    """`streamlit run app.py` on a free local port, as a user starts it (the rest of its settings come
    from .streamlit/config.toml); yields (base URL, process) once it answers its health check."""
    port = free_port()
    cmd = [sys.executable, "-m", "streamlit", "run", str(APP), "--server.port", str(port), "--server.address", "127.0.0.1"]  # fmt: skip
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 600  # only catches a server that never starts
        while True:
            try:
                urllib.request.urlopen(f"{url}/_stcore/health", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"streamlit did not start:\n{log.read_text()}") from None
                time.sleep(0.2)
        yield url, proc
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.fixture(scope="session")
def app_url(tmp_path_factory):
    """Base URL of a running `streamlit run app.py`; its log is kept for a failing test."""
    with streamlit_server(tmp_path_factory.mktemp("streamlit") / "server.log") as (url, _):
        yield url


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def new_context(browser, width: int, height: int, **options):
    """A fresh browser context (its own cookies and session) with a ``width`` x ``height`` viewport."""
    context = browser.new_context(viewport={"width": width, "height": height}, **options)
    context.set_default_timeout(600_000)  # only catches a hang: a busy machine may take minutes, not seconds
    return context


@pytest.fixture
def page(browser):
    context = new_context(browser, 1500, 1200, accept_downloads=True)
    pg = context.new_page()
    yield pg
    context.close()


# The app's root says whether a script run is going on (Streamlit's own end-to-end tests read it). Its status
# widget does not: that shows only after a run has gone on for 500 ms.
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'


def wait_idle(page, timeout_ms: int = 600_000, started: bool = False) -> None:
    """Wait until Streamlit has finished the script run the last action started. ``started``: the caller has
    seen that run's own output on the page, so it has begun; else a click's rerun request is given 300 ms to
    reach the server and come back as a running script (the root reads "notRunning" until then)."""
    if not started:
        page.wait_for_timeout(300)
    page.wait_for_selector(IDLE, timeout=timeout_ms)
    page.wait_for_timeout(100)  # React's render of the run's last messages


def goto(page, url: str) -> None:
    """Open a page with a round navigator (step, tree, NASD) and wait until its first run is done."""
    page.goto(url)
    page.get_by_role("button", name="Next").wait_for(timeout=600_000)
    wait_idle(page, started=True)


def next_round(page, times: int = 1, start: int = 0) -> None:
    """Click Next and wait until the page shows the new round (a click is not a rerun yet)."""
    import re

    for i in range(start, start + times):
        page.get_by_role("button", name="Next").click()
        page.get_by_role("heading", name=re.compile(f"^Round {i + 1}:")).wait_for(timeout=600_000)
        wait_idle(page, started=True)


def screenshot_charts(page, folder: Path, name: str) -> None:
    """Screenshot the page (``name``.png) and each chart on it (``name``-chart-<i>.png): the page scrolls
    inside Streamlit's container, so a shot of the page alone misses the charts below the fold."""
    page.screenshot(path=folder / f"{name}.png")
    plots = page.locator(".js-plotly-plot")
    for i in range(plots.count()):
        plots.nth(i).screenshot(path=folder / f"{name}-chart-{i}.png")


def shown(markdown: str) -> str:
    """The text a markdown message shows once specviz.core.markup.md's backslash escapes are read."""
    import re

    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown)
