"""How fast the app answers, measured the way a user meets it. Not a test: these machines are
shared and noisy, so the script reports medians, with the load average, and leaves judging to the reader.

    cold start   from `streamlit run app.py` (a fresh server) to the page usable in a fresh browser
                 context (empty HTTP cache): Home with its title, explanation, the race's controls and
                 the sample form drawn (and, apart, until its race is timed and on screen); Step
                 through with the prompt and the Next button (and, apart, until a click on Next at
                 once shows round 1: on a machine's first start, the kernels' build may still run).
                 chromium is started before the clock, as a user's browser is open already. The median over --starts fresh servers per page,
                 with the disk cache (specviz/core/diskcache.py: the kernels' build, the cost curve)
                 warm, kept from an earlier start as at every start but a machine's first, and cold, an
                 empty folder as on a new machine's first start (--drop-caches also empties the OS's
                 page cache first, as after a reboot: root only)
    next click   server time of one click on Next at K=4 on the target: the round computed and
                 the page script re-run, timed around AppTest's run (which adds its own
                 element-tree bookkeeping, so the figure is an upper bound)
    page render  each page's first script run in a new session, models already loaded

Usage: .venv/bin/python benchmarks/app_speed.py [--starts 3] [--starts-only] [--clicks 30] [--drop-caches] [--json]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
APP = str(ROOT / "app.py")
PAGES = ["home", "lesson", "step", "tree", "nasd", "shootout", "atlas", "exactness", "acceptance"]
TIMEOUT_MS = 300_000  # only catches a start that hangs


def cold_start(browser, page: str, cache: Path, drop_caches: bool) -> dict:
    """One fresh server, its disk cache in ``cache``, and one fresh browser context on ``page`` ("home"
    or "step"): {"usable": s, "race": s (Home: its race on screen), "round": s (Step: round 1 on screen), "load": the 1-minute load average
    just before}."""
    from conftest import free_port

    if drop_caches:  # as after a reboot: torch's libraries and the checkpoints come from disk
        subprocess.run(["sh", "-c", "sync; echo 3 > /proc/sys/vm/drop_caches"], check=True)
    port, load = free_port(), os.getloadavg()[0]
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "streamlit", "run", APP, "--server.port", str(port), "--server.address", "127.0.0.1"]
    with tempfile.TemporaryFile() as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, env=os.environ | {"SPECVIZ_CACHE": str(cache)}, stdout=log,
                                stderr=subprocess.STDOUT)  # fmt: skip
        try:
            while True:  # the browser opens the page as soon as the server answers
                try:
                    urllib.request.urlopen(f"{url}/_stcore/health", timeout=2)
                    break
                except OSError:
                    if proc.poll() is not None or time.perf_counter() - t0 > TIMEOUT_MS / 1000:
                        log.seek(0)
                        raise RuntimeError(f"streamlit did not start:\n{log.read().decode()}") from None
                    time.sleep(0.02)
            context = browser.new_context(viewport={"width": 1024, "height": 768})
            context.set_default_timeout(TIMEOUT_MS)
            tab = context.new_page()
            out = {"load": load}
            if page == "home":
                tab.goto(url)
                tab.get_by_role("heading", name="specviz").wait_for()
                tab.get_by_role("button", name="Measure again").wait_for()
                tab.get_by_role("button", name="Generate").wait_for()  # the last section of the page
                out["usable"] = time.perf_counter() - t0
                tab.frame_locator("iframe").first.locator("#note").wait_for(state="attached")
                out["race"] = time.perf_counter() - t0
            else:
                tab.goto(f"{url}/step")
                tab.locator(".sv-text").nth(1).wait_for()
                tab.get_by_role("button", name="Next").wait_for()
                out["usable"] = time.perf_counter() - t0
                # at once, as an eager student would: on a machine's first start the kernels may still
                # be building, and the first round waits for them
                tab.get_by_role("button", name="Next").click()
                tab.get_by_role("heading", name=re.compile("^Round 1:")).wait_for()
                out["round"] = time.perf_counter() - t0
            context.close()
            return out
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def cold_starts(n: int, drop_caches: bool) -> dict:
    """``n`` starts per page and disk cache, interleaved (cold Home, cold Step, warm Home, warm Step, ...)
    so that the machine's drift reaches each alike; the warm folder is the one the first cold start of
    Home filled (the kernels, and the cost curve its race measured)."""
    from conftest import CHROMIUM, CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright

    from specviz.adaptive.costs import cpu_name

    runs = {(cache, page): [] for cache in ("warm", "cold") for page in ("home", "step")}
    before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="specviz-cache-") as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        warm = Path(tmp) / "cold-0-home"
        for i in range(n):
            for cache in ("cold", "warm"):
                for page in ("home", "step"):
                    folder = warm if cache == "warm" else Path(tmp) / f"cold-{i}-{page}"
                    runs[cache, page].append(cold_start(browser, page, folder, drop_caches))
        browser.close()
    result = {"cpu": cpu_name(), "starts": n, "load_average_before": before}
    loads = [r["load"] for rs in runs.values() for r in rs]  # these count the last start's own work too
    result["load_average_min"], result["load_average_max"] = min(loads), max(loads)
    for (cache, page), rs in runs.items():
        for what in ("usable", "race", "round"):
            if what in rs[0]:
                times = [r[what] for r in rs]
                name = f"start_{cache}_cache_{page}_{what}"
                result[f"{name}_median_s"] = statistics.median(times)
                result[f"{name}_s"] = " ".join(f"{x:.2f}" for x in times)
    return result


def report(result: dict) -> str:
    lines = [f"cold start, median of {result['starts']} fresh servers each, on {result['cpu']}; load average (1 min) "
             f"{result['load_average_before']:.2f} before, {result['load_average_min']:.2f}-"
             f"{result['load_average_max']:.2f} at the starts (their own work included)",
             f"{'':<48}{'Home usable':>14}{'Home raced':>14}{'Step usable':>14}{'Step round 1':>14}"]  # fmt: skip
    for cache, what in (("warm", "kept from an earlier start"), ("cold", "emptied: a new machine")):
        cells = [
            result[f"start_{cache}_cache_{k}_median_s"]
            for k in ("home_usable", "home_race", "step_usable", "step_round")
        ]
        lines.append(f"  {cache} disk cache ({what})".ljust(48) + "".join(f"{x:>12.2f} s" for x in cells))
    return "\n".join(lines)


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
    ap.add_argument("--starts", type=int, default=3, help="fresh servers per page and disk cache")
    ap.add_argument("--starts-only", action="store_true", help="the cold starts alone")
    ap.add_argument("--clicks", type=int, default=30)
    ap.add_argument("--drop-caches", action="store_true", help="empty the page cache before each start (root)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    result = cold_starts(args.starts, args.drop_caches)
    if not args.starts_only:
        _, result["first_load_apptest_s"] = open_page("step")  # this process's first run: loads the models
        for name in PAGES:
            result[f"page_{name}_first_render_s"] = open_page(name)[1]
        clicks = next_clicks(args.clicks)
        result |= {"next_click_median_ms": 1000 * statistics.median(clicks), "next_click_max_ms": 1000 * max(clicks),
                   "next_clicks": len(clicks)}  # fmt: skip
    if args.json:
        print(json.dumps(result))
        return
    print(report(result))
    for k, v in result.items():
        print(f"{k:<44} {v:9.3f}" if isinstance(v, float) else f"{k:<44} {v:>9}")


if __name__ == "__main__":
    main()
