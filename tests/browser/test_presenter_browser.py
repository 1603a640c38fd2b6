"""The step page's presenter layout in chromium: on a projector's screen, with the sidebar open as the
app opens, one round fits after Next: the marked-up text, the candidate table and the p/q chart all
inside the viewport, with no scrolling."""

import pytest
from conftest import goto, new_context, next_round, wait_idle

# The three elements a class reads, by their containers' keys (ui/presenter_view.py).
PARTS = {"the text": ".st-key-sv-text", "the candidate table": ".st-key-sv-checks", "the p/q chart": ".st-key-sv-pq"}

# Elements scrolled away from their start, but for the text's own box and the tables' scrollers.
SCROLLED_JS = """() => [...document.querySelectorAll('*')]
  .filter(e => e.scrollTop !== 0 && !e.closest('.sv-scroll, [data-testid="stDataFrame"]'))
  .map(e => e.tagName + '.' + e.className)"""


def parts_outside(page, width: int, height: int) -> dict:
    """The PARTS not wholly inside a ``width`` x ``height`` viewport, with their boxes (each must be on the page)."""
    outside = {}
    for name, selector in PARTS.items():
        box = page.locator(selector).bounding_box()
        assert box is not None, f"{name} ({selector}) is not on the page"
        if box["x"] < 0 or box["y"] < 0 or box["x"] + box["width"] > width or box["y"] + box["height"] > height:
            outside[name] = box
    return outside


@pytest.mark.parametrize("size", [(1024, 768), (1280, 720)], ids=["1024x768", "1280x720"])
def test_one_round_fits_a_projector(app_url, browser, tmp_path, size):
    width, height = size
    context = new_context(browser, width, height)
    page = context.new_page()
    goto(page, f"{app_url}/step")
    next_round(page)
    page.locator(".st-key-sv-pq .js-plotly-plot").wait_for()  # the chart may land after the heading
    page.locator(".st-key-sv-checks [data-testid='stDataFrame']").wait_for()
    wait_idle(page, started=True)
    page.screenshot(path=tmp_path / f"step-{width}x{height}.png")
    assert page.evaluate(SCROLLED_JS) == [], "the page scrolled"
    outside = parts_outside(page, width, height)
    context.close()
    assert not outside, f"outside the {width}x{height} viewport: {outside}"
