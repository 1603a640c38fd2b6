"""Retake docs/screenshots/: every page and every method's panel on the step page, at 1024x768 (a
projector's screen) with the sidebar open as the app opens, in Debian's chromium through Playwright.
No shot is taken while the script runs or a spinner shows: each waits for the page to be idle
(tests/conftest.py wait_idle) and for every chart on it to be drawn.

Usage: .venv/bin/python benchmarks/screenshots.py [--out docs/screenshots] [--url http://...] [--only step ...]
(without --url it starts its own `streamlit run app.py`; a shot takes seconds to minutes on a busy machine)
"""

import argparse
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from conftest import CHROMIUM, CHROMIUM_ARGS, goto, new_context, next_round, streamlit_server, wait_idle  # noqa: E402

SIZE = (1024, 768)
# Each method's panel: the step page opened by a link for that method, two rounds in, scrolled to the
# panel (ui/round_view.py's sv-panels, where block verification's panel is too): name -> (the link's
# query, where to scroll).
PANELS = {
    "step-medusa": ({"drafter": "medusa", "k": "3"}, "sv-panels"),
    "step-eagle": ({"drafter": "eagle3", "k": "4"}, "sv-panels"),
    "step-lookahead": ({"drafter": "lookahead", "k": "4", "temperature": "0.8"}, "sv-panels"),
    "step-traversal": ({"drafter": "distilled-tree", "verification": "traversal", "temperature": "1.0"}, "sv-panels"),
    "step-block": ({"verification": "block", "temperature": "1.0", "k": "6"}, "sv-panels"),
}
# Every chart drawn (plotly puts its SVG in), and no spinner, no skeleton left.
DRAWN_JS = """() => !document.querySelector('[data-testid="stSpinner"], [data-testid="stSkeleton"]')
  && [...document.querySelectorAll('.js-plotly-plot')].every(p => p.querySelector('.main-svg'))"""


def settle(page) -> None:
    """Idle, every chart drawn, the pointer off any button (no tooltip in the shot)."""
    wait_idle(page)
    page.wait_for_function(DRAWN_JS, timeout=600_000)
    page.mouse.move(0, 0)
    page.wait_for_timeout(1000)
    wait_idle(page)


def open_plain(page, url: str) -> None:
    page.goto(url)
    page.get_by_role("heading").first.wait_for(timeout=600_000)
    settle(page)


def home(page, url: str) -> None:
    open_plain(page, url)
    page.frame_locator("iframe").first.get_by_text("Measured:").wait_for(timeout=600_000)  # the race run to the end
    settle(page)


def stepped(page, url: str) -> None:
    goto(page, url)
    next_round(page, 2)
    settle(page)


def shootout(page, url: str) -> None:
    open_plain(page, f"{url}?max_new_tokens=8&k=2")
    page.get_by_role("button", name="Run the shoot-out").click()
    page.get_by_text("Speedup against K").first.wait_for(timeout=1_200_000)  # a chart's title, drawn after the run
    settle(page)


def toggle(page, label: str) -> None:
    page.get_by_text(label, exact=True).click()
    settle(page)


def shots(base: str) -> dict:
    """name -> what brings a fresh page to the state shown."""
    out = {"home": lambda page: home(page, base), "lesson": lambda page: open_plain(page, f"{base}/lesson")}

    def full(page):  # the full layout: the presenter layout toggled off
        stepped(page, f"{base}/step")
        toggle(page, "Presenter layout")

    def phases(page):
        stepped(page, f"{base}/step")
        toggle(page, "Phase by phase")
        page.get_by_role("button", name="Next phase").click()
        settle(page)

    out |= {"step-presenter": lambda page: stepped(page, f"{base}/step"), "step": full, "step-phases": phases}
    # The tree and NASD pages draw their rounds for their own drafters only: opened by a link for one.
    out["tree"] = lambda page: stepped(page, f"{base}/tree?drafter=trie&preset=Quote+a+passage")
    out["nasd"] = lambda page: stepped(page, f"{base}/nasd?drafter=nasd&preset=Quote+a+passage&nasd_filler_top_k=3")
    out["shootout"] = lambda page: shootout(page, f"{base}/shootout")
    out |= {
        name: lambda page, name=name: open_plain(page, f"{base}/{name}")
        for name in ("atlas", "exactness", "acceptance")
    }

    def panel(page, link, key):
        stepped(page, link)
        page.locator(f".st-key-{key}").first.evaluate("e => e.scrollIntoView({block: 'start'})")
        settle(page)

    for name, (query, key) in {**PANELS, **other_panels()}.items():
        link = f"{base}/step?" + "&".join(f"{k}={v}" for k, v in query.items())
        out[name] = lambda page, link=link, key=key: panel(page, link, key)
    out["tree-shape"] = lambda page: stepped(page, f"{base}/tree?" + "&".join(f"{k}={v}" for k, v in shaped().items()))
    # every other page the router lists, as it opens: a page added there is shot without an edit here
    for name in re.findall(r'url_path="([^"]+)"', (ROOT / "app.py").read_text()):
        if name not in out and not any(key.startswith(name) for key in out):
            out[name] = lambda page, name=name: open_plain(page, f"{base}/{name}")
    return out


def other_panels() -> dict:
    """A shot for each method panel PANELS does not show (a method added since): its first drafter on that
    drafter's preset, or a lossy rule's first showcase drafter at T = 0.8. -> name -> (query, where to scroll)"""
    from specviz.drafters import REGISTRY
    from specviz.verifiers import VERIFIERS
    from ui.method_views import PANELS as DRAWN

    shown = {p for query, _ in PANELS.values() for p in REGISTRY[query.get("drafter", "trigram")].panels}
    shown |= {p for query, _ in PANELS.values() for p in VERIFIERS[query.get("verification", "lossless")].panels}
    out = {}
    for panel in DRAWN:
        if panel in shown:
            continue
        drafter = next((n for n, c in REGISTRY.items() if panel in c.panels), None)
        if drafter is not None:
            query = {"drafter": drafter, "preset": REGISTRY[drafter].preset.replace(" ", "+")}
        else:
            rule = next(v for v in VERIFIERS.values() if panel in v.panels)
            query = {"drafter": rule.showcase[0], "verification": rule.name, "temperature": "0.8"}
        out[f"step-{panel.split()[0]}"] = (query, "sv-panels")
        shown.add(panel)
    return out


def shaped() -> dict:
    """The tree page's link for the first drafter with a shape to choose, in Sequoia's shape."""
    from specviz.drafters import REGISTRY

    drafter = next(n for n, c in REGISTRY.items() if c.shaped)
    return {"drafter": drafter, "preset": REGISTRY[drafter].preset.replace(" ", "+"), "tree_shape": "sequoia"}


def shoot(browser, base: str, out: Path, only: set[str]) -> list[str]:
    """Each shot in a fresh browser context (its own session): -> the names taken."""
    taken = []
    for name, action in shots(base).items():
        if only and name not in only:
            continue
        context = new_context(browser, *SIZE)
        try:
            page = context.new_page()
            action(page)
            page.screenshot(path=out / f"{name}.png")
            taken.append(name)
            print(name, flush=True)
        finally:
            context.close()
    return taken


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    ap.add_argument("--url", help="a running app's base URL (default: start one)")
    ap.add_argument("--only", nargs="*", default=[], help="shot names to retake (default: all)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        if args.url:
            taken = shoot(browser, args.url.rstrip("/"), args.out, set(args.only))
        else:
            with streamlit_server(Path(tempfile.mkdtemp()) / "server.log") as (url, _):
                taken = shoot(browser, url, args.out, set(args.only))
        browser.close()
    print(f"{len(taken)} screenshots in {args.out}: {', '.join(taken)}")


if __name__ == "__main__":
    main()
