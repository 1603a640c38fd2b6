"""How fast the app answers, measured the way a user meets it. Not a test: these machines are
shared and noisy, so the script reports medians and leaves judging to the reader.

    first load   a fresh `streamlit run app.py`, a fresh browser context opening /step, until the
                 page shows the prompt and the Next button: model load, the first script run and
                 the front end's own start-up included (Playwright + /usr/bin/chromium); the
                 median over --loads fresh servers, optionally with the page cache emptied first
    next click   server time of one click on Next at K=4 on the target: the round computed and
                 the page script re-run, timed around AppTest's run (which adds its own
                 element-tree bookkeeping, so the figure is an upper bound)
    page render  each page's first script run in a new session, models already loaded

Usage: .venv/bin/python benchmarks/app_speed.py [--clicks 30] [--loads 5] [--drop-caches] [--json]
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
APP = str(ROOT / "app.py")
PAGES = ["home", "lesson", "step", "tree", "nasd", "shootout", "atlas", "exactness", "acceptance"]


def first_load_in_browser(drop_caches: bool) -> float:
    """One fresh server and one fresh browser context (empty HTTP cache), as a first visit."""
    import subprocess
    import tempfile

    from conftest import CHROMIUM, CHROMIUM_ARGS, streamlit_server
    from playwright.sync_api import sync_playwright

    if drop_caches:  # as after a reboot: torch's libraries and the checkpoints come from disk
        subprocess.run(["sh", "-c", "sync; echo 3 > /proc/sys/vm/drop_caches"], check=True)
    with streamlit_server(Path(tempfile.mkdtemp()) / "server.log") as (url, _):
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_context().new_page()
            t0 = time.perf_counter()
            page.goto(f"{url}/step")
            page.locator(".sv-text").nth(1).wait_for(timeout=120_000)
            page.get_by_role("button", name="Next").wait_for(timeout=120_000)
            elapsed = time.perf_counter() - t0
            browser.close()
        return elapsed


def open_page(name: str, query: dict | None = None) -> tuple[AppTest, float]:
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params.update(query or {})
    at.switch_page(f"pages/{name}.py")
    t0 = time.perf_counter()
    at.run()
    elapsed = time.perf_counter() - t0
    if at.exception:
        raise RuntimeError(f"{name}: {at.exception[0].value}")
    return at, elapsed


def next_clicks(n: int) -> list[float]:
    at, _ = open_page("step", {"k": "4", "max_new_tokens": "1000"})
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        at.button(key="nav_next").click().run()
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clicks", type=int, default=30)
    ap.add_argument("--loads", type=int, default=5, help="first loads, each on a fresh server")
    ap.add_argument("--drop-caches", action="store_true", help="empty the page cache before each load (root)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    loads = [first_load_in_browser(args.drop_caches) for _ in range(args.loads)]
    result = {"first_load_browser_median_s": statistics.median(loads), "first_load_browser_max_s": max(loads),
              "first_loads_s": " ".join(f"{x:.2f}" for x in loads)}  # fmt: skip
    _, result["first_load_apptest_s"] = open_page("step")  # this process's first run: loads the models
    for name in PAGES:
        result[f"page_{name}_first_render_s"] = open_page(name)[1]
    clicks = next_clicks(args.clicks)
    result |= {"next_click_median_ms": 1000 * statistics.median(clicks), "next_click_max_ms": 1000 * max(clicks),
               "next_clicks": len(clicks)}  # fmt: skip
    if args.json:
        print(json.dumps(result))
        return
    for k, v in result.items():
        print(f"{k:<36} {v:9.3f}" if isinstance(v, float) else f"{k:<36} {v:>9}")


if __name__ == "__main__":
    main()
