"""The NASD page in chromium: it steps and draws its charts."""

from conftest import wait_idle


def test_nasd_page_in_a_browser(app_url, page, tmp_path):
    page.goto(f"{app_url}/nasd?drafter=nasd&preset=Quote+a+passage&nasd_filler_top_k=3")
    page.get_by_role("button", name="Next").wait_for(timeout=600_000)
    wait_idle(page)
    for i in range(2):
        page.get_by_role("button", name="Next").click()
        page.get_by_role("heading", name=f"Round {i + 1}:").wait_for(timeout=600_000)
        wait_idle(page)
    plots = page.locator(".js-plotly-plot")
    plots.nth(1).wait_for(timeout=600_000)  # on a busy machine the charts may land after the heading
    assert plots.count() == 2 and plots.first.is_visible()
    page.screenshot(path=tmp_path / "nasd.png")
    for i in range(plots.count()):  # the page scrolls inside Streamlit's container: one shot per chart
        plots.nth(i).screenshot(path=tmp_path / f"nasd-chart-{i}.png")
