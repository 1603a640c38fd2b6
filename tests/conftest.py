"""Shared fixtures: the shipped checkpoints (float32, loaded once per test session and never
mutated; tests/test_engine.py overrides them with float64 copies), and for the real-browser tests
one `streamlit run app.py` per test session on a free local port and a Playwright page in
Debian's chromium (/usr/bin/chromium).

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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1500, "height": 1200}, accept_downloads=True)
    context.set_default_timeout(600_000)  # only catches a hang: a busy machine may take minutes, not seconds
    pg = context.new_page()
    yield pg
    context.close()


def wait_idle(page, timeout_ms: int = 600_000) -> None:
    """Wait until Streamlit has finished the script run the last action started."""
    page.wait_for_timeout(300)  # let the rerun request reach the server
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached", timeout=timeout_ms)
    page.wait_for_timeout(200)


def shown(markdown: str) -> str:
    """The text a markdown message shows once specviz.core.markup.md's backslash escapes are read."""
    import re

    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown)
