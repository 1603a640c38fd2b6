"""The app in a real browser: `streamlit run app.py` driven by Playwright in Debian's chromium.
Screenshots are saved under each test's tmp_path (pytest prints it on failure)."""

import json
import re
from urllib.parse import urlencode

import pytest
from conftest import app_pages, goto, new_context, next_round, wait_idle
from test_overflow import check_page


def test_step_through_in_a_browser(app_url, page, tmp_path):
    query = urlencode({"prompt": "&amp; ROMEO:\n", "k": "4", "drafter": "trigram", "temperature": "0.8"})
    goto(page, f"{app_url}/step?{query}")
    next_round(page, 3)
    text = page.locator(".sv-text").nth(1).inner_text()
    assert text.startswith("&amp; ROMEO:")  # escaped: the entity shows as typed
    assert page.locator(".sv-accepted, .sv-bonus, .sv-correction").count() >= 3
    page.locator(".js-plotly-plot").nth(3).wait_for(timeout=600_000)  # charts may land after the heading
    assert page.locator(".js-plotly-plot").first.is_visible()
    page.screenshot(path=tmp_path / "step.png", full_page=True)

    with page.expect_download() as download:
        page.get_by_role("button", name="Download the trace (JSON)").click()
    trace = json.loads(download.value.path().read_text())
    assert len(trace["rounds"]) == 3 and trace["settings"]["k"] == 4
    with page.expect_download() as download:
        page.get_by_role("button", name="Download an offline copy (HTML)").click()
    replay = tmp_path / "replay.html"
    download.value.save_as(replay)
    offline = page.context.new_page()  # the file on its own, from disk
    offline.goto(replay.as_uri())
    offline.get_by_role("button", name="Last").click()
    assert offline.locator("#heading").inner_text().startswith("Round 3 of 3:")
    offline.close()

    # Autoplay: the rounds advance on their own until paused.
    page.get_by_role("button", name="Play").click()
    page.get_by_role("heading", name=re.compile("^Round 5:")).wait_for(timeout=600_000)
    page.get_by_role("button", name="Pause").click()
    # paused once the button reads Play again: a loaded machine can take longer than wait_idle's 300 ms to start
    # the click's run, and the rounds advance until it does
    page.get_by_role("button", name="Play").wait_for(timeout=600_000)
    wait_idle(page, started=True)
    shown = page.get_by_role("heading", name=re.compile(r"^Round \d+:")).first.inner_text()
    page.wait_for_timeout(2500)
    assert page.get_by_role("heading", name=re.compile(r"^Round \d+:")).first.inner_text() == shown

    # Markup in the prompt: named in a message, shown as text, and the run stays on screen.
    box = page.get_by_label("Prompt text")
    box.fill("<b>x</b>")
    box.press("Control+Enter")
    wait_idle(page)
    error = page.locator('[data-testid="stAlertContentError"]').first
    assert "'<'" in error.inner_text() and error.locator("b").count() == 0
    assert page.locator(".sv-text").nth(1).inner_text().startswith("&amp; ROMEO:")
    page.screenshot(path=tmp_path / "step-bad-prompt.png", full_page=True)


def test_shootout_in_a_browser(app_url, page, tmp_path):
    page.goto(f"{app_url}/shootout?max_new_tokens=8&k=2")
    page.get_by_role("button", name="Run the shoot-out").click()
    page.locator(".js-plotly-plot").nth(4).wait_for(timeout=1_200_000)
    wait_idle(page)
    page.get_by_text("Speedup against K").first.wait_for()  # a chart title: plotly draws it after the run
    page.screenshot(path=tmp_path / "shootout.png", full_page=True)


def test_home_opens_on_the_race(app_url, page):
    page.goto(app_url)
    race = page.frame_locator("iframe").first
    race.get_by_text("Measured:").wait_for(timeout=600_000)  # both lanes replayed to the end
    assert race.locator("#s0").inner_text().endswith("(done)") and race.locator("#s1").inner_text().endswith("(done)")
    note = race.locator("#note").inner_text()
    # with the race's run-to-run spread: the lowest and highest speedup of its 3 runs
    assert re.search(r"plain \d+ ms, speculative \d+ ms: \d+\.\d\d× as fast \(its 3 runs: \d+\.\d\d× to "
                     r"\d+\.\d\d×\), and the same characters", note), note  # fmt: skip
    assert race.locator("#t0").inner_text() == race.locator("#t1").inner_text()  # greedy: the same text


# Every element whose text must be read whole: buttons, metric labels and values, headings, widget
# labels and tabs; and every table (a dataframe's scroller), which must not scroll sideways. An element (or one inside it) whose content is wider than its box is cut or spills;
# one that reaches past the right edge of its page column or of the sidebar is cut by them.
OVERFLOW_JS = """() => {
  const sel = ['button', '[data-testid="stMetricValue"]', '[data-testid="stMetricLabel"]', 'h1', 'h2', 'h3',
               '[data-testid="stWidgetLabel"]', 'button[role="tab"]'];
  const edges = '[data-testid="stMainBlockContainer"], [data-testid="stSidebarContent"]';
  const out = [];
  for (const el of document.querySelectorAll('[data-testid="stDataFrame"] .dvn-scroller')) {
    if (el.offsetParent !== null && el.scrollWidth > el.clientWidth + 1) {
      out.push('table scrolls sideways: ' + (el.closest('[data-testid="stDataFrame"]').innerText || '').slice(0, 60));
    }
  }
  for (const s of sel) for (const el of document.querySelectorAll(s)) {
    if (el.offsetParent === null) continue;
    const frame = el.closest(edges);
    if (frame && el.getBoundingClientRect().right > frame.getBoundingClientRect().right + 1) {
      out.push(s + ' past the edge: ' + el.innerText.slice(0, 60)); continue;
    }
    for (const e of [el, ...el.querySelectorAll('*')]) {
      if (e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1) { out.push(s + ': ' + el.innerText.slice(0, 60)); break; }
    }
  }
  return out;
}"""


@pytest.mark.parametrize("size", [(1024, 768), (1280, 720)], ids=["1024x768", "1280x720"])
def test_every_page_fits_a_projector(app_url, browser, tmp_path, size):
    """At projector sizes, no button, metric, heading, widget label or tab is cut or spills out of its
    box, and no table scrolls sideways; each page is screenshot (docs/screenshots holds the 1024x768
    ones the README shows). And, while every page loads, no request leaves the app's own origin: no
    fonts, icons or telemetry from elsewhere. The same visit runs test_overflow.py's chart and table checks
    on the pages without a run (check_page), so that each page is opened once a size."""
    context = new_context(browser, *size)
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    cut, found = {}, []
    for path in app_pages():
        page.goto(f"{app_url}/{path}")
        page.get_by_role("heading").first.wait_for()  # the page's own run has begun
        wait_idle(page, started=True)
        check_page(page, path, found, tmp_path)
        if path == "step":
            next_round(page, 2)
            page.mouse.move(0, 0)  # no tooltip over the shot: the pointer off the button, and time to fade
            page.wait_for_timeout(1000)
            page.screenshot(path=tmp_path / "step.png")
            if spilt := page.evaluate(OVERFLOW_JS):
                cut["step"] = spilt
            page.get_by_text("Phase by phase").click()  # and the round phase by phase
            page.get_by_role("button", name="Next phase").wait_for()
            wait_idle(page, started=True)
            page.get_by_role("button", name="Next phase").click()
            wait_idle(page)
            path = "step-phases"
        page.screenshot(path=tmp_path / f"{path or 'home'}.png")
        if spilt := page.evaluate(OVERFLOW_JS):
            cut[path or "home"] = spilt
    assert not page.get_by_text("Deploy", exact=True).is_visible()  # client.toolbarMode = "minimal"
    context.close()
    assert not cut, f"cut or spilling at {size[0]}x{size[1]}: {cut}"
    assert not found, f"{len(found)} chart or table violations at {size[0]}x{size[1]}:\n" + "\n".join(found)
    assert len(requests) > 50  # the pages did load (scripts, styles, the websocket)
    foreign = sorted({u for u in requests if not u.startswith(app_url) and not u.startswith("data:")})
    assert not foreign, f"requests outside {app_url}: {foreign}"


NAMELESS_JS = """() => {
  // Interactive elements a screen reader would announce without a name.
  const out = [];
  for (const el of document.querySelectorAll('button, input, textarea, [role="slider"], [role="combobox"], a[href]')) {
    if (el.offsetParent === null || el.disabled) continue;
    const labelled = (el.getAttribute('aria-labelledby') || '').split(' ').filter(Boolean)
      .map(id => (document.getElementById(id) || {}).innerText || '').join('');
    const label = el.id ? (document.querySelector(`label[for="${el.id}"]`) || {}).innerText || '' : '';
    const name = (el.getAttribute('aria-label') || labelled || label || el.innerText || el.title || el.value || '').trim();
    if (!name) out.push(el.outerHTML.slice(0, 120));
  }
  return out;
}"""


def test_step_page_reads_in_order_with_a_screen_reader(app_url, page):
    """Accessibility, as far as a test can check it: every control on the step page has a name a
    screen reader announces, and Tab reaches the round navigator's buttons in their visual order."""
    goto(page, f"{app_url}/step")
    next_round(page, 1)
    assert page.evaluate(NAMELESS_JS) == []
    page.get_by_role("button", name="Reset", exact=False).filter(has_text="Home").focus()
    labels = ["Reset", "Previous", "Next", "To the end", "Play"]
    order = []
    for _ in labels:
        text = page.evaluate("() => document.activeElement.innerText")
        order.append(next((label for label in labels if label in text.split("\n")), text))
        page.keyboard.press("Tab")
    assert order == labels
