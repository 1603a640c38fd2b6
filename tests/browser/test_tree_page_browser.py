"""The trie page in chromium: it steps and draws its five charts."""

from conftest import wait_idle


def test_tree_page_in_a_browser(app_url, page, tmp_path):
    page.goto(f"{app_url}/tree?drafter=trie&preset=Quote+a+passage")
    page.get_by_role("button", name="Next").wait_for(timeout=600_000)
    wait_idle(page)
    page.get_by_role("button", name="Next").click()
    page.get_by_role("heading", name="Round 1:").wait_for(timeout=600_000)
    wait_idle(page)
    plots = page.locator(".js-plotly-plot")
    plots.nth(4).wait_for(timeout=600_000)  # on a busy machine the charts may land after the heading
    assert plots.count() == 5 and plots.first.is_visible()  # trie, draft tree, flattening, cache, mask
    assert page.locator(".js-plotly-plot .heatmaplayer").count() == 1
    page.screenshot(path=tmp_path / "tree.png")
    for i in range(plots.count()):  # the page scrolls inside Streamlit's container: one shot per chart
        plots.nth(i).screenshot(path=tmp_path / f"tree-chart-{i}.png")
