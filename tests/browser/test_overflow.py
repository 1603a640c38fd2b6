"""The classroom on a projector: at 1024x768 and 1280x720 every chart's text fits its figure, no two
labels overlap, no chart text is under 12 px, no chart is blank without a sentence saying why, and
every table shows its columns without scrolling sideways.

One run visits every page and every method's panels and reports every violation (page, chart,
element) at the end, so a run shows all that is wrong, not the first thing. The pages without a run are checked
during tests/browser/test_browser.py's visit of every page (check_page), which opens them at the same sizes."""

import re

import pytest
from conftest import goto, new_context, next_round, wait_idle

MIN_PX = 12  # the smallest chart text that reads from the back of a classroom

# Each chart's text by role: (role, CSS selector inside the plot). Axis titles of subplots are
# xtitle, x2title, ...; tick labels of every axis share xtick / ytick.
CHECK_CHARTS = r"""
([minPx]) => {
  const roles = [
    ["title", "text.gtitle, text.gtitle-subtitle"],
    ["x title", "text[class^='x'][class$='title']"],
    ["y title", "text[class^='y'][class$='title']"],
    ["x tick", "g.xtick text, g[class^='x'][class$='tick'] text"],
    ["y tick", "g.ytick text, g[class^='y'][class$='tick'] text"],
    ["legend", ".legend text"],
    ["colour bar", ".colorbar text"],
    ["annotation", ".annotation-text"],
    ["bar label", ".bartext"],
  ];
  // A label's outline on screen, 2 px inside its box: four corners, turned with the label
  // (the boxes of labels at an angle overlap where their letters do not).
  const quad = (el) => {
    const b = el.getBBox(), m = el.getScreenCTM(), k = 2;
    return [[b.x + k, b.y + k], [b.x + b.width - k, b.y + k], [b.x + b.width - k, b.y + b.height - k],
            [b.x + k, b.y + b.height - k]].map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
  };
  const overlap = (p, q) => {  // two convex outlines overlap unless an edge's normal separates them
    for (const poly of [p, q])
      for (let i = 0; i < 4; i++) {
        const [x1, y1] = poly[i], [x2, y2] = poly[(i + 1) % 4], nx = y1 - y2, ny = x2 - x1;
        const a = p.map(([x, y]) => nx * x + ny * y), b = q.map(([x, y]) => nx * x + ny * y);
        if (Math.max(...a) <= Math.min(...b) || Math.max(...b) <= Math.min(...a)) return false;
      }
    return true;
  };
  const out = [];
  document.querySelectorAll(".js-plotly-plot").forEach((plot, i) => {
    const box = plot.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) return;  // in a closed expander or tab
    const title = (plot.querySelector("text.gtitle") || {}).textContent || `chart ${i}`;
    const name = `chart ${i} "${title.slice(0, 60)}"`;
    // a chart with nothing to draw says why in a sentence (an annotation), never shows blank axes
    const points = (t) => ["x", "y", "z", "values"].some((k) => t[k] && t[k].length);
    if (!(plot.data || []).some(points) && !((plot.layout || {}).annotations || []).length)
      out.push(`${name} is blank, and no sentence says why`);
    const seen = new Set(), items = [];
    for (const [role, sel] of roles) {
      plot.querySelectorAll(sel).forEach((el) => {
        if (seen.has(el)) return;
        seen.add(el);
        const text = el.textContent.trim();
        const r = el.getBoundingClientRect();
        if (!text || r.width === 0 || r.height === 0) return;
        if (getComputedStyle(el).visibility === "hidden" || el.closest("[style*='opacity: 0']")) return;
        items.push({role, text, r, el});
      });
    }
    for (const {role, text, r, el} of items) {
      const what = `${name}: ${role} "${text.slice(0, 40)}"`;
      if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1)
        out.push(`${what} is cut: [${Math.round(r.left - box.left)}, ${Math.round(r.right - box.left)}] x ` +
                 `[${Math.round(r.top - box.top)}, ${Math.round(r.bottom - box.top)}] outside ` +
                 `${Math.round(box.width)} x ${Math.round(box.height)}`);
      const m = el.getScreenCTM();
      const scale = m ? Math.hypot(m.a, m.b) : 1;
      const sizes = [el, ...el.querySelectorAll("tspan")].map((t) => parseFloat(getComputedStyle(t).fontSize));
      const px = Math.min(...sizes) * scale;
      if (px < minPx - 0.01) out.push(`${what} is ${px.toFixed(1)} px`);
      if ((role === "annotation" || role === "bar label") && m && Math.abs(m.b) > 0.01)
        out.push(`${what} is turned on its side`);
    }
    for (let a = 0; a < items.length; a++)
      for (let b = a + 1; b < items.length; b++) {
        const p = items[a], q = items[b];
        if (p.el.contains(q.el) || q.el.contains(p.el)) continue;
        if (overlap(quad(p.el), quad(q.el)))
          out.push(`${name}: ${p.role} "${p.text.slice(0, 30)}" overlaps ${q.role} "${q.text.slice(0, 30)}"`);
      }
  });
  return out;
}
"""

# A dataframe is a canvas grid: its columns fit when nothing scrolls sideways.
CHECK_TABLES = r"""
() => {
  const out = [];
  document.querySelectorAll("[data-testid='stDataFrame']").forEach((frame, i) => {
    const s = frame.querySelector(".dvn-scroller");
    if (!s || s.clientWidth === 0) return;
    if (s.scrollWidth > s.clientWidth + 1)
      out.push(`table ${i} scrolls sideways: ${s.scrollWidth} px of columns in ${s.clientWidth} px`);
  });
  return out;
}
"""

STEP = [  # (name, url, rounds): every method's panel on the step, tree and NASD pages
    ("medusa", "/step?drafter=medusa&preset=Dialogue", 2),
    ("eagle traversal", "/step?drafter=eagle3-tree&verification=traversal&temperature=1.0", 2),
    ("trigram block", "/step?drafter=trigram&verification=block&temperature=0.8", 2),
    ("lookahead", "/step?drafter=lookahead&preset=Counting", 2),
    ("lookahead, first round", "/step?drafter=lookahead&preset=Counting", 1),
    ("trie page", "/tree?drafter=trie&preset=Quote+a+passage", 2),
    ("nasd page, before round 1", "/nasd?drafter=nasd&preset=Repetitive", 0),
    ("nasd page", "/nasd?drafter=nasd&preset=Repetitive", 2),
    ("nasd step", "/step?drafter=nasd&preset=Repetitive", 2),
]


def _panels(url: str) -> set[str]:
    """The method panels a step, tree or NASD link's run draws (its drafter's and verifier's)."""
    from urllib.parse import parse_qs, urlparse

    from specviz.drafters import REGISTRY
    from specviz.verifiers import VERIFIERS

    q = {k: v[0] for k, v in parse_qs(urlparse(url).query).items()}
    verifier = VERIFIERS.get(q.get("verification", "lossless"))
    return {*REGISTRY[q.get("drafter", "trigram")].panels, *(verifier.panels if verifier else ())}


def every_panel() -> list[tuple[str, str, int]]:
    """STEP, and for a panel no entry of it draws (a method added since), its first method on its preset:
    a new drafter's or verifier's panel is checked without an edit here."""
    from urllib.parse import urlencode

    from specviz.drafters import REGISTRY
    from specviz.verifiers import VERIFIERS
    from ui.method_views import PANELS

    runs, seen = list(STEP), set().union(*(_panels(url) for _, url, _ in STEP))
    for panel in PANELS:
        if panel in seen:
            continue
        drafter = next((n for n, c in REGISTRY.items() if panel in c.panels), None)
        if drafter is not None:
            query = {"drafter": drafter, "preset": REGISTRY[drafter].preset}
        else:
            rule = next(n for n, v in VERIFIERS.items() if panel in v.panels)
            query = {"drafter": "trigram", "verification": rule, "temperature": 0.8}
        runs.append((panel, f"/step?{urlencode(query)}", 2))
        seen |= _panels(runs[-1][1])
    return runs


def test_every_panel_is_visited():
    from ui.method_views import PANELS, TREE_PAGE_PANELS

    assert {*PANELS, *TREE_PAGE_PANELS} <= set().union(*(_panels(url) for _, url, _ in every_panel()))


# Every chart Streamlit has put on the page is drawn by plotly (its SVG is in), and the count has held still
# for two polls: plotly draws after the script run, so charts land after the heading.
CHARTS_DRAWN = r"""
() => {
  const boxes = document.querySelectorAll("[data-testid='stPlotlyChart']");
  const drawn = [...boxes].every((b) => b.querySelector(".js-plotly-plot .main-svg"));
  const key = `${boxes.length}`;
  const ok = drawn && window.__specvizCharts === key;
  window.__specvizCharts = key;
  return ok;
}
"""


def _settle(page) -> None:
    """Once the script run has ended (the caller waits for it): its charts drawn."""
    page.evaluate("window.__specvizCharts = null")  # two polls of this run's charts, never the last run's
    page.wait_for_function(CHARTS_DRAWN, polling=100)
    page.wait_for_timeout(250)  # plotly's own re-layout after the container's width is known


def _check(page, where: str, found: list[str], shots, name: str) -> None:
    _settle(page)
    new = [f"{where}: {v}" for v in page.evaluate(CHECK_CHARTS, [MIN_PX]) + page.evaluate(CHECK_TABLES)]
    found += new
    if new:  # what the eye needs to judge a violation: each chart and table on its own (the page scrolls
        # inside Streamlit's container, so a shot of the page misses them)
        stem = re.sub(r"[^a-z0-9]+", "-", name)
        for kind, sel in (("chart", ".js-plotly-plot"), ("table", "[data-testid='stDataFrame']")):
            items = page.locator(sel)
            for i in range(items.count()):
                if items.nth(i).is_visible():
                    items.nth(i).screenshot(path=shots / f"{stem}-{kind}-{i}.png")


def _visit_runs(page, app_url, runs, found, shots) -> None:
    for name, url, rounds in runs:
        goto(page, app_url + url)
        next_round(page, rounds)
        _check(page, f"{name} ({url}, {rounds} rounds)", found, shots, name)


def _visit_phases(page, app_url, found, shots) -> None:
    """The phases panel: every phase of a sampled round (draft, verify, each check, residual or bonus)."""
    goto(page, app_url + "/step?drafter=trigram&temperature=1.0")
    next_round(page, 2)
    page.get_by_text("Phase by phase").click()
    button = page.get_by_role("button", name="Next phase")
    button.wait_for()
    wait_idle(page, started=True)
    for i in range(12):  # a round of K = 4 has at most 8 phases; the button's disabled at the last
        _check(page, f"phases (phase {i + 1})", found, shots, f"phase-{i + 1}")
        if button.is_disabled():
            break
        button.click()
        wait_idle(page)


# Visited with their rounds (every_panel) or their run (below). The other pages' charts and tables are checked
# by tests/browser/test_browser.py's visit of every page at the same two sizes (check_page): one visit a page.
RUN_PAGES = ("step", "tree", "nasd", "shootout")


def check_page(page, path: str, found: list[str], shots) -> None:
    """The checks above on a page that is not a run page, opened and idle."""
    if path not in RUN_PAGES:
        _check(page, f"/{path}", found, shots, path or "home")


def _visit_shootout(page, app_url, found, shots) -> None:
    page.goto(f"{app_url}/shootout?max_new_tokens=8&k=2")
    page.get_by_role("button", name="Run the shoot-out").click()
    page.locator(".js-plotly-plot").nth(4).wait_for(timeout=1_200_000)
    wait_idle(page, started=True)
    _check(page, "/shootout", found, shots, "shootout")


RUNS = every_panel()
HALF = (len(RUNS) + 1) // 2
# Four visits a size, so that the test processes share the work: each visit opens its own browser context.
VISITS = {
    "panels-1": lambda page, url, found, shots: _visit_runs(page, url, RUNS[:HALF], found, shots),
    "panels-2": lambda page, url, found, shots: _visit_runs(page, url, RUNS[HALF:], found, shots),
    "phases": _visit_phases,
    "shootout": _visit_shootout,
}


@pytest.mark.parametrize("visit", VISITS)
@pytest.mark.parametrize("width,height", [(1024, 768), (1280, 720)], ids=["1024x768", "1280x720"])
def test_every_chart_and_table_fits_a_projector(app_url, browser, tmp_path, width, height, visit):
    context = new_context(browser, width, height)
    page = context.new_page()
    found: list[str] = []
    VISITS[visit](page, app_url, found, tmp_path)
    context.close()
    print(f"screenshots of the charts and tables with a violation in {tmp_path}")
    assert not found, f"{len(found)} violations at {width}x{height} ({visit}):\n" + "\n".join(found)
