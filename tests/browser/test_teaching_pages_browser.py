"""The teaching pages in chromium: acceptance math, the exactness lab and the guided lesson, once each."""

from conftest import wait_idle

from specviz.teaching import toy


def test_teaching_pages_in_a_browser(app_url, page, tmp_path):
    page.goto(f"{app_url}/acceptance")
    page.get_by_role("heading", name="Acceptance math").wait_for(timeout=600_000)
    wait_idle(page, started=True)
    page.get_by_text("bump", exact=True).click()
    wait_idle(page)
    plots = page.locator(".js-plotly-plot")
    plots.nth(4).wait_for(state="visible")  # plotly draws after the script run has finished
    assert plots.first.is_visible()
    p, q = toy.make_pair(shape="bump")
    assert f"{toy.overlap(p, q).alpha:.4f}" in page.get_by_test_id("stMetric").first.inner_text()
    page.screenshot(path=tmp_path / "acceptance.png", full_page=True)

    page.goto(f"{app_url}/exactness")
    page.get_by_role("button", name="Run").wait_for(timeout=600_000)
    wait_idle(page, started=True)
    box = page.get_by_role("spinbutton", name="Generations N")
    box.fill("100")
    box.press("Enter")
    wait_idle(page)
    page.get_by_test_id("stRadioGroup").get_by_text("2", exact=True).click()
    wait_idle(page)
    page.get_by_role("button", name="Run").click()
    page.get_by_text("Chi-square, every position").wait_for(timeout=1_200_000)
    wait_idle(page, started=True)
    page.locator(".js-plotly-plot").nth(1).wait_for(state="visible")
    assert "100 runs" in page.locator(".js-plotly-plot").nth(1).inner_text()
    page.screenshot(path=tmp_path / "exactness.png", full_page=True)

    page.goto(f"{app_url}/lesson")
    page.get_by_role("heading", name="The setup").wait_for(timeout=600_000)
    wait_idle(page, started=True)
    page.get_by_text("Predict, then reveal").click()
    wait_idle(page)
    for _ in range(3):
        page.get_by_role("button", name="Next").click()
        wait_idle(page)
    page.get_by_role("heading", name="3.1 Check draft 1").wait_for()
    page.locator(".js-plotly-plot").first.wait_for(state="visible")
    assert "accepted or rejected?" in page.locator(".js-plotly-plot").first.inner_text()
    page.get_by_text("accepted", exact=True).click()
    page.get_by_role("button", name="Reveal", exact=True).click()
    page.get_by_text("You predicted").wait_for()  # the rerun may land after the page looks idle (busy machine)
    page.screenshot(path=tmp_path / "lesson.png", full_page=True)
