"""A class on one server: N students open the step page of the same preset and step through
rounds, each pausing a few seconds between clicks as a reader does. Students are real browsers
(Playwright driving Debian's chromium, one browser context each) or, with ``--browsers B``, B
browsers and N - B wire students (benchmarks/wire_student.py: the same session traffic, nothing
drawn). Not a test: it reports, and leaves judging to the reader.

    per step   from a click on Next until that student's page shows the new round's heading:
               the round (computed once for the whole class: ui/controls.py shares runs), the
               script run and, in a browser, its own drawing; p50 and p95 over every click, for
               all students and for each kind
    server     the streamlit process's resident memory, sampled every 0.2 s: peak and end
    machine    the load average before and after, and where each side ran

``--pin`` runs the server on CPU 0 and the students on the other CPUs, as in a classroom where each
student's browser runs on the student's own machine; without it the students and the server share
every core. 30 chromium renderers on one core measure that core drawing plotly 30 times over, not
the server: ``--students 30 --browsers 1 --pin`` is the teacher's laptop serving a class, with
one real student's browser drawing every step on the core the server does not use.

Usage: .venv/bin/python benchmarks/class_size.py [--students 30] [--browsers B] [--steps 5] [--think 3] [--pin] [--json]
CI runs it with 2 students, one a browser and one on the wire (tests/browser/test_class_size.py), to keep it working.
"""

import argparse
import asyncio
import json
import os
import random
import re
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from conftest import CHROMIUM, CHROMIUM_ARGS, streamlit_server  # noqa: E402
from wire_student import wire_student  # noqa: E402

QUERY = {"drafter": "distilled", "k": "4", "temperature": "0.8", "seed": "0", "max_new_tokens": "200",
         "prompt": "ROMEO:\nBut soft, what light through yonder window breaks?\n"}  # fmt: skip
TIMEOUT_MS = 600_000  # only catches a hang
PATIENCE_MS, RETRIES = 60_000, 2  # a click not answered in a minute is clicked again, twice at most


def run_async(coro):
    """asyncio.run in a thread of its own: the caller may be running an event loop already (a test
    process that used sync Playwright does)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status")
    if not status.exists():  # the server has stopped
        return float("nan")
    for line in status.read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class RSSSampler(threading.Thread):
    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.peak, self.stop = pid, 0.0, threading.Event()

    def run(self):
        while not self.stop.wait(0.2):
            self.peak = max(self.peak, rss_mb(self.pid))


async def student(browser, url: str, steps: int, think: float, rng: random.Random) -> tuple[list[float], int]:
    """One browser context: open the step page, then click Next ``steps`` times. -> (seconds per step,
    clicks made again because the page did not answer the first)"""
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    context = await browser.new_context(viewport={"width": 1024, "height": 768})
    context.set_default_timeout(TIMEOUT_MS)
    page = await context.new_page()
    await page.goto(url)
    await page.get_by_role("button", name="Next").wait_for()
    times, again = [], 0
    for i in range(steps):
        await asyncio.sleep(rng.uniform(0.5 * think, 1.5 * think))  # reading the round before
        t0 = time.perf_counter()
        for attempt in range(RETRIES + 1):
            await page.get_by_role("button", name="Next").click()
            try:  # a click the page never answers is clicked again, as a student would, and counted
                await page.get_by_role("heading", name=re.compile(f"^Round {i + 1}:")).wait_for(timeout=PATIENCE_MS)
                break
            except PlaywrightTimeout:
                if attempt == RETRIES:
                    shot = Path(tempfile.gettempdir()) / f"class_size_unanswered_{id(page)}.png"
                    await page.screenshot(path=str(shot), full_page=True)
                    raise RuntimeError(
                        f"a student's Next went unanswered {RETRIES + 1} times (screenshot: {shot})"
                    ) from None
                again += 1
        times.append(time.perf_counter() - t0)
    await context.close()
    return times, again


async def classroom(base: str, students: int, browsers: int, steps: int, think: float, seed: int):
    """-> (per browser student, per wire student): each (seconds per step, clicks made again)."""
    from playwright.async_api import async_playwright

    url = f"{base}/step?{urlencode(QUERY)}"
    rngs = [random.Random(seed + i) for i in range(students)]
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        per = await asyncio.gather(
            *(student(browser, url, steps, think, rng) for rng in rngs[:browsers]),
            *(wire_student(base, QUERY, steps, think, rng) for rng in rngs[browsers:]),
        )
        await browser.close()
    return per[:browsers], per[browsers:]


def p95(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=20, method="inclusive")[-1] if len(xs) > 1 else xs[0]


def summary(per: list[tuple[list[float], int]]) -> dict:
    times = [t for ts, _ in per for t in ts]
    if not times:
        return {"clicks": 0}
    return {"clicks": len(times), "clicked_again": sum(a for _, a in per), "p50_s": statistics.median(times),
            "p95_s": p95(times), "max_s": max(times)}  # fmt: skip


def measure(students: int, steps: int, think: float, pin: bool, browsers: int | None = None, seed: int = 0) -> dict:
    """``browsers`` of the ``students`` are chromium tabs (all by default); the rest are wire students."""
    browsers = students if browsers is None else browsers
    if students < 1 or steps < 1 or think < 0 or not 0 <= browsers <= students:
        raise ValueError("students and steps must be at least 1, think at least 0, browsers between 0 and students")
    cpus = sorted(os.sched_getaffinity(0))
    pin = pin and len(cpus) > 1
    load_before = os.getloadavg()
    if pin:
        os.sched_setaffinity(0, {cpus[0]})  # the server inherits CPU 0 ...
    with streamlit_server(Path(tempfile.mkdtemp()) / "server.log") as (url, proc):
        if pin:
            os.sched_setaffinity(0, set(cpus[1:]))  # ... the browsers (started next) get the rest
        sampler = RSSSampler(proc.pid)
        sampler.start()
        t0 = time.perf_counter()
        in_browsers, on_wire = run_async(classroom(url, students, browsers, steps, think, seed))
        wall = time.perf_counter() - t0
        sampler.stop.set()
        end_rss = rss_mb(proc.pid)
    os.sched_setaffinity(0, set(cpus))
    return {
        "students": students, "browsers": browsers, "steps": steps, "think_s": think, "pinned": pin,
        **summary(in_browsers + on_wire), "browser": summary(in_browsers), "wire": summary(on_wire),
        "server_rss_peak_mb": round(max(sampler.peak, end_rss), 1), "server_rss_end_mb": round(end_rss, 1),
        "wall_s": round(wall, 1), "cpus": len(cpus),
        "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()],
    }  # fmt: skip


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=30)
    ap.add_argument("--steps", type=int, default=5, help="Next clicks per student")
    ap.add_argument("--think", type=float, default=3.0, help="mean seconds a student reads between clicks (0.5x-1.5x)")
    ap.add_argument("--browsers", type=int, help="how many students are chromium tabs (default: all); the rest "
                    "are wire students, who send and receive what a browser does but draw nothing")  # fmt: skip
    ap.add_argument("--pin", action="store_true", help="server on CPU 0, browsers on the others")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    try:
        res = measure(args.students, args.steps, args.think, args.pin, args.browsers)
    except ValueError as e:
        ap.exit(2, f"class_size: {e}\n")
    if args.json:
        print(json.dumps(res))
        return
    groups = "; ".join(
        f"{name} ({g['clicks']} clicks, {g['clicked_again']} made again): p50 {g['p50_s']:.3f} s, p95 {g['p95_s']:.3f} s, "
        f"max {g['max_s']:.3f} s" for name, g in (("all", res), ("browsers", res["browser"]), ("wire", res["wire"])) if g["clicks"]
    )  # fmt: skip
    print(f"{res['students']} students ({res['browsers']} in chromium) x {res['steps']} steps, think {res['think_s']} s, "
          f"{'server pinned to 1 of' if res['pinned'] else 'everything on'} {res['cpus']} CPUs: per step {groups}; "
          f"server RSS peak {res['server_rss_peak_mb']} MB; load {res['load_before']} -> {res['load_after']}")  # fmt: skip


if __name__ == "__main__":
    main()
