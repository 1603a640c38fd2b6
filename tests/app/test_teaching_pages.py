"""The teaching pages: acceptance math, the exactness lab and the guided lesson, in AppTest (chart
specs must hold the numbers specviz computes); once each in chromium:
tests/browser/test_teaching_pages_browser.py."""

import pytest
from conftest import chart_specs, lesson_trace, open_page, rerun, shown
from streamlit.testing.v1 import AppTest

from specviz.charts import exactness as exactness_charts
from specviz.core.settings import Settings
from specviz.teaching import lesson, toy
from specviz.teaching.exactness import run_exactness
from specviz.teaching.presets import preset
from specviz.teaching.stats import expected_tokens_per_round


def chart(at: AppTest, title: str) -> dict:
    """The spec of the one chart whose title contains ``title``."""
    found = [s for s in chart_specs(at) if title in s["layout"]["title"]["text"]]
    assert len(found) == 1, f"{len(found)} charts titled {title!r}"
    return found[0]


def series(spec: dict, name: str) -> list:
    return next(t for t in spec["data"] if t["name"] == name)["y"]


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def close(a, b) -> bool:
    return len(a) == len(b) and all(abs(x - y) < 1e-9 for x, y in zip(a, b, strict=True))


# Acceptance math


def test_acceptance_page_shows_the_toys_numbers():
    at = open_page("pages/acceptance.py")
    p, q = toy.make_pair(32, "random", 1.0, 0.5, 0, 0)  # the page's defaults
    o = toy.overlap(p, q)
    assert (
        metric(at, "Acceptance rate α = Σ min(p, q)") == f"{o.alpha:.4f}"
        and metric(at, "Total variation TV(p, q)") == f"{1 - o.alpha:.4f}"
    )
    spec = chart(at, "p and q")
    assert f"{o.alpha:.4f}" in spec["layout"]["title"]["text"]
    assert close(series(spec, "p (target)"), p.tolist()) and close(series(spec, "q (draft)"), q.tolist())
    assert close(series(spec, "min(p, q)"), o.overlap.tolist())
    assert close(series(chart(at, "Residual"), "residual norm(max(0, p − q))"), o.residual.tolist())
    sim = toy.simulate(p, q, 5000, 0)
    assert close(series(chart(at, "Simulated output"), "output frequency (5,000 steps)"),
                 toy.histogram(sim.tokens, 32).tolist())  # fmt: skip
    per_k = chart(at, "Tokens per round")
    assert close(
        series(per_k, "expected (1 − α^(K+1)) / (1 − α)"), [expected_tokens_per_round(o.alpha, k) for k in range(1, 9)]
    )
    assert close(series(per_k, "measured in the simulation"), [r["measured"] for r in toy.per_k(o.alpha, sim.accepted)])
    assert metric(at, "p-value") == f"{toy.fit(sim.tokens, p)[2]:.3g}"


def test_acceptance_sliders_reshape_p_and_q():
    at = open_page("pages/acceptance.py")
    at.radio(key="toy_shape").set_value("bump")
    at.slider(key="toy_temperature").set_value(1.0)
    rerun(at)
    assert metric(at, "Acceptance rate α = Σ min(p, q)") == "1.0000"  # q = p: every draft accepted
    assert chart(at, "No residual: p = q")["data"][0]["y"] == [0.0] * 32
    at.slider(key="toy_shift").set_value(4)
    at.slider(key="toy_v").set_value(16)
    at.select_slider(key="toy_steps").set_value(20_000)
    at.number_input(key="toy_sim_seed").set_value(3)
    rerun(at)
    p, q = toy.make_pair(16, "bump", 1.0, 1.0, 4, 0)
    o = toy.overlap(p, q)
    assert o.alpha < 0.9 and metric(at, "Acceptance rate α = Σ min(p, q)") == f"{o.alpha:.4f}"
    assert close(series(chart(at, "p and q"), "q (draft)"), q.tolist())
    sim = toy.simulate(p, q, 20_000, 3)
    assert close(series(chart(at, "Simulated output"), "output frequency (20,000 steps)"),
                 toy.histogram(sim.tokens, 16).tolist())  # fmt: skip
    # The mistake's curve levels off at its exact limit, drawn beside it.
    limit = toy.tv(toy.output_distribution(p, q, "p"), p)
    names = [t["name"] for t in chart(at, "as the steps add up")["data"]]
    assert f"its limit, TV = {limit:.4f}" in names


# Exactness lab


@pytest.mark.slow  # the exactness lab runs on the page (~7 s)
def test_exactness_lab_runs_caches_and_keeps_results(target):
    at = open_page("pages/exactness.py")
    assert not at.get("plotly_chart") and not at.button(key="ex_run").disabled  # nothing runs on first render
    at.number_input(key="ex_samples").set_value(200)
    at.radio(key="ex_tokens").set_value(2)
    at.button(key="ex_run").click()
    rerun(at)
    ids = target.tokenizer.encode(preset("Free verse").text)
    res = run_exactness(target, ids, Settings(), 200, n_tokens=2)  # the sidebar's defaults
    assert metric(at, "Chi-square, every position") == f"{res.joint.statistic:.1f}"
    assert metric(at, "p-value") == f"{res.p_value:.3g}"
    assert "output positions 1–5" in at.success[0].value and "draft positions 1–4 of K = 4" in at.success[0].value
    assert metric(at, "Total variation (TV) distance") == f"{res.tv_distance:.4f}"
    rows = exactness_charts.outcome_rows(res.expected, res.observed, target.tokenizer.chars)
    spec = chart(at, "The first 2 characters")
    assert close(series(spec, "expected (exact target), ±2σ band"), [r["expected"] for r in rows])
    assert close(series(spec, "observed (speculative runs)"), [r["observed"] for r in rows])
    assert "No evidence of bias" in at.success[0].value
    assert chart(at, "Every position")["data"][0]["y"][0].startswith("1 · p ")

    at.slider(key="ctl_k").set_value(3)  # other settings: the last result stays, labelled
    rerun(at)
    assert "other settings" in at.info[0].value and metric(at, "p-value") == f"{res.p_value:.3g}"
    at.slider(key="ctl_k").set_value(4)  # back: the cached result, no run
    rerun(at)
    assert not at.info and metric(at, "p-value") == f"{res.p_value:.3g}"

    at.text_area(key="ctl_prompt").set_value("<b>")  # bad input: a message, Run disabled, result kept
    rerun(at)
    assert "'<'" in shown(at.error[0].value) and at.button(key="ex_run").disabled
    assert metric(at, "p-value") == f"{res.p_value:.3g}"
    # A rule that cannot verify a tree: refused before Run, and the last result stays.
    at.text_area(key="ctl_prompt").set_value("I am. I as. I at. I a")  # the trie branches after "I a"
    at.selectbox(key="ctl_drafter").set_value("trie")
    at.selectbox(key="ctl_verification").set_value("nasd-seed")
    rerun(at)
    assert any("checks chains only" in shown(e.value) for e in at.error) and at.button(key="ex_run").disabled
    assert metric(at, "p-value") == f"{res.p_value:.3g}"


def test_exactness_lab_refuses_a_prompt_longer_than_its_window_before_run(target):
    at = open_page("pages/exactness.py")
    long = preset("Free verse").text * 40  # far beyond the 256-character window
    at.text_area(key="ctl_prompt").set_value(long)
    rerun(at)
    fits = target.config.block_size - 4  # runs of K + 1 = 5 characters: the prompt and 4 generated in one window
    assert f"last {fits} characters" in shown(at.error[0].value) and at.button(key="ex_run").disabled
    at.button(key="ex_keep_last").click()
    rerun(at)
    assert at.session_state["ctl_prompt"] == long[-fits:] and at.session_state["ctl_preset"] == "Free text"
    assert not at.error and not at.button(key="ex_run").disabled


@pytest.mark.slow  # the exactness lab runs 1,000 generations on the page (~17 s)
def test_exactness_lab_catches_seed_004s_rule():
    at = open_page("pages/exactness.py")
    at.button(key="ex_demo").click()
    rerun(at)
    state = at.session_state
    assert state["ctl_verification"] == "nasd-seed" and state["ctl_drafter"] == "nasd"
    assert state["ctl_prompt"] == preset("Repetitive").text
    assert at.number_input(key="ex_samples").value == 1000  # the default: enough runs to catch it (200 may not)
    at.radio(key="ex_tokens").set_value(2)
    at.button(key="ex_run").click()
    rerun(at)
    assert any("NOT the target's distribution" in shown(e.value) for e in at.error), [e.value for e in at.error]
    at.button(key="ex_demo").click()  # now "back to the lossless rule"
    rerun(at)
    assert at.session_state["ctl_verification"] == "lossless"
    at.button(key="ex_run").click()
    rerun(at)
    assert not at.error and len(at.success) == 1


# Guided lesson


def step_title(at: AppTest) -> str:
    return at.subheader[0].value


def next_step(at: AppTest, times: int = 1) -> AppTest:
    for _ in range(times):
        at.button(key="lesson_next").click()
        rerun(at)
    return at


def test_lesson_walks_through_the_round(target):
    at = open_page("pages/lesson.py")
    trace = lesson_trace(target, lesson.EXAMPLE, preset(lesson.EXAMPLE_PRESET).text)
    main = trace.rounds[0]
    assert step_title(at) == "The setup" and not at.get("plotly_chart")
    next_step(at, 3)  # setup, draft, verify: then the first check
    pos = main.positions[0]
    assert step_title(at).startswith("3.1 Check draft 1")
    spec = chart(at, "Depth 1")
    assert f"p/q={pos.ratio:.3f}" in spec["layout"]["title"]["text"] and len(at.get("plotly_chart")) == 1
    next_step(at, len(main.positions))
    assert "last character" in step_title(at)
    assert chart(at, "Residual")["data"][0]["y"][0] == max(main.residual)
    while not at.button(key="lesson_next").disabled:
        next_step(at)
    assert step_title(at).startswith("8. The numbers")
    table = at.table[0].value
    tried = sum(len(r.positions) for r in trace.rounds)
    accepted = sum(r.n_accepted for r in trace.rounds)
    assert f"{accepted} / {tried}" in list(table["counts"])
    at.button(key="lesson_restart").click()
    rerun(at)
    assert step_title(at) == "The setup"


def test_lesson_predict_then_reveal(target):
    trace = lesson_trace(target, lesson.EXAMPLE, preset(lesson.EXAMPLE_PRESET).text)
    verdicts = [p.accepted for p in trace.rounds[0].positions]
    at = open_page("pages/lesson.py")
    at.toggle(key="lesson_predict").set_value(True)
    next_step(rerun(at), 3)
    title = chart(at, "Depth 1")["layout"]["title"]["text"]
    assert "u=" not in title
    # Nothing gives the answer away before the guess: Next waits for it, and the step count (how many
    # checks follow) is not shown.
    assert at.button(key="lesson_next").disabled and not at.get("progress")
    at.button(key="lesson_reveal_3").click()  # no prediction yet: asked to choose
    rerun(at)
    assert "Pick a prediction first" in at.warning[0].value
    at.radio(key="lesson_guess_3").set_value("accepted" if verdicts[0] else "rejected")  # right
    at.button(key="lesson_reveal_3").click()
    rerun(at)
    assert "right." in at.success[0].value and "Score: 1 of 1" in at.caption[0].value
    assert "u=" in chart(at, "Depth 1")["layout"]["title"]["text"]  # the verdict is out
    assert not at.button(key="lesson_next").disabled
    next_step(at)
    at.radio(key="lesson_guess_4").set_value("rejected" if verdicts[1] else "accepted")  # wrong
    at.button(key="lesson_reveal_4").click()
    rerun(at)
    assert "not this time" in at.warning[0].value and "Score: 1 of 2" in at.caption[0].value


def test_lesson_follows_the_sidebar():
    at = open_page("pages/lesson.py")
    at.radio(key="lesson_source").set_value("The sidebar's run")
    at.selectbox(key="ctl_drafter").set_value("none")
    rerun(at)
    assert "drafted nothing" in at.warning[0].value
    at.selectbox(key="ctl_drafter").set_value("bigram")
    rerun(at)
    assert step_title(at) == "The setup" and "(bigram)" in at.markdown[1].value  # [0] is the page's question
    at.text_area(key="ctl_prompt").set_value("")
    rerun(at)
    assert "prompt is empty" in shown(at.error[0].value) and "need fixing" in at.info[0].value
