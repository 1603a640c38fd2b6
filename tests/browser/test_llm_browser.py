"""Step through on a real model in chromium at 1024x768: a tiny Llama folder (tests/llm_models.py) picked in
the sidebar as "A local folder", two rounds stepped; the presenter layout's text, candidate table and p/q chart
fit the screen, and every chart and table passes the projector checks of test_overflow.py (no text cut or
overlapping, none under 12 px, no table scrolling sideways)."""

from conftest import goto, new_context, next_round, wait_idle
from test_overflow import CHECK_CHARTS, CHECK_TABLES, MIN_PX
from test_presenter_browser import parts_outside

from tests.llm_models import folder


def test_step_through_on_a_local_folder_fits_1024x768(app_url, browser, tmp_path):
    width, height = 1024, 768
    context = new_context(browser, width, height)
    context.set_default_timeout(120_000)  # a tiny model: seconds, not minutes
    page = context.new_page()
    goto(page, f"{app_url}/step?max_new_tokens=24")
    page.locator("[data-testid='stSelectbox']").filter(has_text="Model").first.click()
    page.get_by_role("option", name="A local folder").click()
    wait_idle(page)
    box = page.get_by_role("textbox", name="Model folder")
    box.fill(str(folder("llama")))
    box.press("Enter")
    wait_idle(page)
    page.get_by_role("button", name="Next").wait_for()
    next_round(page, 2)
    page.locator(".st-key-sv-pq .js-plotly-plot").wait_for()
    wait_idle(page, started=True)
    page.wait_for_timeout(1500)  # plotly draws after the script run
    page.screenshot(path=tmp_path / "llm-step-1024x768.png")
    text = page.locator(".st-key-sv-text").inner_text()
    assert "\u00b7" in text  # word pieces: spaces as markers
    assert page.locator(".st-key-sv-text .sv-piece[title*='id ']").count() > 5  # each token's id in its hover
    outside = parts_outside(page, width, height)
    found = page.evaluate(CHECK_CHARTS, [MIN_PX]) + page.evaluate(CHECK_TABLES)
    context.close()
    assert not outside, f"outside the {width}x{height} viewport: {outside}"
    assert not found, "\n".join(found)
