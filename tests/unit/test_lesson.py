"""The teaching pages' content without the app: the toy's figures, and the guided lesson's rounds,
speedup and question bars."""

import plotly.graph_objects as go
import pytest
from conftest import lesson_trace

from specviz.charts import lesson as lesson_charts
from specviz.charts import toy as toy_charts
from specviz.teaching import lesson, toy
from specviz.teaching.presets import preset


def test_toy_figures_are_valid_plotly():
    p, q = toy.make_pair()
    o = toy.overlap(p, q)
    sim = toy.simulate(p, q, 1000)
    figures = [toy_charts.overlap_bars(p, q, o), toy_charts.residual_bars(o),
               toy_charts.residual_bars(toy.overlap(p, p)),
               toy_charts.histogram_bars(toy.histogram(sim.tokens, 32), p, 1000, 0.1),
               toy_charts.convergence_chart({"a": toy.convergence(sim.tokens, p)}, {"a": 0.0}),
               toy_charts.tokens_per_round_chart(toy.per_k(o.alpha, sim.accepted), o.alpha)]  # fmt: skip
    for fig in figures:
        go.Figure(fig.to_dict())  # validates every property: raises on a misspelt one


def test_the_lessons_example_shows_every_case(target):
    trace = lesson_trace(target, lesson.EXAMPLE, preset(lesson.EXAMPLE_PRESET).text)
    main, bonus = lesson.pick_rounds(trace.rounds)
    assert main.n_accepted >= 1 and main.correction is not None and bonus.bonus is not None
    steps = lesson.steps(trace.rounds, trace.vocab, lesson.EXAMPLE)
    assert 9 <= len(steps) <= 14
    checks = [s for s in steps if s.parts == ("check",)]
    assert len(checks) == len(main.positions)
    for s, pos in zip(checks, main.positions, strict=True):
        assert f"{pos.q_x:.3f}" in s.text and f"{pos.p_x:.3f}" in s.text
        assert ("accepted" if pos.accepted else "rejected") in s.outcome and "accepted**" not in s.text
    rows = {g["metric"]: g for g in lesson.glossary(trace.rounds, 4)}
    tried = sum(len(r.positions) for r in trace.rounds)
    accepted = sum(r.n_accepted for r in trace.rounds)
    assert rows["Acceptance rate α"]["counts"] == f"{accepted} / {tried}"
    assert rows["Tokens per target forward pass"]["counts"] == f"{len(trace.tokens)} / {len(trace.rounds)}"
    assert {"Accepted length", "Acceptance rate per position", "Speedup"} <= set(rows)


def test_the_lessons_speedup_is_measured_not_quoted(target, tiny):
    ids = target.tokenizer.encode(preset(lesson.EXAMPLE_PRESET).text)
    timing = lesson.measure_speedup(target, tiny.model, ids, lesson.EXAMPLE, rounds=4, repeats=1)
    assert timing["speedup"] == pytest.approx(timing["plain_s"] / timing["speculative_s"])
    trace = lesson_trace(target, lesson.EXAMPLE, preset(lesson.EXAMPLE_PRESET).text)
    row = {g["metric"]: g for g in lesson.glossary(trace.rounds, 4, timing)}["Speedup"]
    assert (
        row["value"].startswith(f"{timing['speedup']:.2f}×") and f"{timing['plain_s'] * 1000:.1f} ms" in row["counts"]
    )
    assert {g["metric"]: g for g in lesson.glossary(trace.rounds, 4)}["Speedup"]["value"] == "– (not measured)"
    assert "measured just now on this machine: " in row["value"] and "median of 1 runs" in row["value"]


def test_the_verify_step_tells_the_prefill_apart(target, tiny):
    """Round 1's pass also reads the prompt: the step says so and gives the pass's cost without it."""
    trace = lesson_trace(target, lesson.EXAMPLE, preset(lesson.EXAMPLE_PRESET).text)
    first = trace.rounds[0]
    assert first.prefilled == len(trace.prompt) - 1 and not any(r.prefilled for r in trace.rounds[1:])
    ids = target.tokenizer.encode(preset(lesson.EXAMPLE_PRESET).text)
    timing = lesson.measure_speedup(target, tiny.model, ids, lesson.EXAMPLE, len(trace.rounds), repeats=2)
    assert timing["verify_passes"] and timing["plain_passes"]
    verify = next(s for s in lesson.steps(trace.rounds, trace.vocab, lesson.EXAMPLE, timing) if "verify" in s.parts)
    if first.index == verify.round:
        assert f"also read {first.prefilled} characters of the prompt" in verify.text
    assert "Without a prefill" in verify.text and "plain decoding's one-position pass" in verify.text
    bare = next(s for s in lesson.steps(trace.rounds, trace.vocab, lesson.EXAMPLE) if "verify" in s.parts)
    assert "Without a prefill" not in bare.text


def test_question_bars_hide_the_verdict(target):
    trace = lesson_trace(target, lesson.EXAMPLE, preset(lesson.EXAMPLE_PRESET).text)
    pos = trace.rounds[0].positions[-1]
    fig = lesson_charts.question_bars(pos, trace.vocab)
    text = fig.layout.title.text + " ".join(a.text for a in fig.layout.annotations)
    assert "rejected" not in text.replace("accepted or rejected?", "") and "u=" not in text
    go.Figure(fig.to_dict())
