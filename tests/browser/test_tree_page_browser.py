"""The trie page in chromium: it steps and draws its five charts."""

from conftest import goto, next_round, screenshot_charts


def test_tree_page_in_a_browser(app_url, page, tmp_path):
    goto(page, f"{app_url}/tree?drafter=trie&preset=Quote+a+passage")
    next_round(page)
    plots = page.locator(".js-plotly-plot")
    plots.nth(4).wait_for(timeout=600_000)  # on a busy machine the charts may land after the heading
    assert plots.count() == 5 and plots.first.is_visible()  # trie, draft tree, flattening, cache, mask
    assert page.locator(".js-plotly-plot .heatmaplayer").count() == 1
    screenshot_charts(page, tmp_path, "tree")
