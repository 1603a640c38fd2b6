"""The NASD page in chromium: it steps and draws its charts."""

from conftest import goto, next_round, screenshot_charts


def test_nasd_page_in_a_browser(app_url, page, tmp_path):
    goto(page, f"{app_url}/nasd?drafter=nasd&preset=Quote+a+passage&nasd_filler_top_k=3")
    next_round(page, 2)
    plots = page.locator(".js-plotly-plot")
    plots.nth(1).wait_for(timeout=600_000)  # on a busy machine the charts may land after the heading
    assert plots.count() == 2 and plots.first.is_visible()
    screenshot_charts(page, tmp_path, "nasd")
