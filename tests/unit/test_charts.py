"""Charts are pure functions of the records: every number drawn is a number recorded."""

import pandas as pd
import pytest

from models.checkpoint import load_checkpoint
from specviz import charts
from specviz.core.session import Session
from specviz.core.settings import Settings
from specviz.teaching.stats import acceptance_by_position, expected_tokens_per_round, running_totals


@pytest.fixture(scope="module")
def run():
    target = load_checkpoint("target")
    s = Session(target, target.tokenizer.encode("ROMEO:\n"), Settings(drafter="trigram", k=4, temperature=0.8))
    # at least 15 rounds, and until some end in a correction and some in a bonus (both are charted)
    while len(s.rounds) < 15 or not all(any(getattr(r, f) is not None for r in s.rounds) for f in ("residual", "bonus")):  # fmt: skip
        assert len(s.rounds) < 100, "no correction or no bonus in 100 rounds"
        s.forward()
    return s, target.tokenizer.chars


def trace_by_name(fig, name):
    return next(t for t in fig.data if t.name == name)


def test_pq_bars_hold_p_q_and_their_overlap(run):
    s, vocab = run
    for r in s.rounds:
        for pos in r.positions:
            fig = charts.pq_bars(pos, vocab)
            x = list(trace_by_name(fig, "p (target)").x)
            ids = [next(t for t in range(len(vocab)) if charts.label(vocab, t) == c) for c in x]
            assert pos.token in ids
            p, q = pos.p.tolist(), pos.q.tolist()
            assert list(trace_by_name(fig, "p (target)").y) == [p[t] for t in ids]
            assert list(trace_by_name(fig, "q (draft)").y) == [q[t] for t in ids]
            assert list(trace_by_name(fig, "min(p, q)").y) == [min(p[t], q[t]) for t in ids]
            alpha = sum(min(a, b) for a, b in zip(p, q, strict=True))
            assert f"Σ min(p, q) = {alpha:.3f}" in fig.layout.title.text


def test_residual_and_bonus_mark_the_drawn_token(run):
    s, vocab = run
    assert any(r.residual is not None for r in s.rounds) and any(r.bonus_p is not None for r in s.rounds)
    for r in s.rounds:
        fig = charts.residual_bars(r, vocab) if r.residual is not None else charts.bonus_bars(r, vocab)
        dist, drawn = (r.residual, r.correction) if r.residual is not None else (r.bonus_p, r.bonus)
        bar = fig.data[0]
        i = list(bar.x).index(charts.label(vocab, drawn))
        assert bar.y[i] == float(dist[drawn]) and bar.marker.color[i] == charts.distributions.DRAW_COLOUR


def test_kv_ledger_and_timeline_add_up(run):
    s, _ = run
    for r in s.rounds:
        fig = charts.kv_ledger(r)
        cached, new, dropped = fig.data
        assert list(cached.x) == [r.kv_before] * 3
        assert new.x[0] == r.kv_after_verify - r.kv_before == len(r.draft_tokens) + 1
        assert r.kv_before + new.x[1] == r.kv_after_trim and new.x[1] == r.n_accepted + 1
        assert new.x[1] + dropped.x[0] == new.x[0]
    t = charts.kv_timeline(s.rounds, current=3)
    before, kept, dropped = t.data[:3]
    for i, r in enumerate(s.rounds):
        assert (
            before.y[i] + kept.y[i] == r.kv_after_trim and before.y[i] + kept.y[i] + dropped.y[i] == r.kv_after_verify
        )


def test_candidate_table_and_acceptance_by_position(run):
    s, vocab = run
    for r in s.rounds:
        df = charts.candidate_frame(r, vocab)
        assert len(df) == len(r.positions)
        assert list(df["p(x)"]) == [p.p_x for p in r.positions] and list(df["u"]) == [p.u for p in r.positions]
        assert list(df["result"] == "accepted") == [p.accepted for p in r.positions]
        # No min(1, p/q) column: p/q capped at 1 is it. Seven columns, each shown in the ~300 px
        # beside the text at 1024 px (charts.checks_view).
        assert list(df["p/q"].clip(upper=1.0)) == [p.accept_prob for p in r.positions]
        view = charts.checks_view(r)
        assert len(df.columns) == 7 and set(view) == set(df.columns) and sum(v["width"] for v in view.values()) <= 300
    rows = acceptance_by_position(s.rounds)
    assert sum(x["tried"] for x in rows) == sum(len(r.positions) for r in s.rounds)
    assert rows[0]["tried"] == len(s.rounds)  # every round tries its first drafted token
    fig = charts.acceptance_chart(rows)
    assert list(fig.data[0].y) == [x["rate"] for x in rows]


def test_running_totals_and_the_expected_tokens_formula(run):
    s, _ = run
    t = running_totals(s.rounds, 4)
    assert t["tokens"] == len(s.generation.trace.tokens) and t["rounds"] == len(s.rounds)
    assert t["tokens_per_forward"] == t["tokens"] / len(s.rounds)
    assert expected_tokens_per_round(0.0, 4) == 1.0 and expected_tokens_per_round(1.0, 4) == 5.0
    assert expected_tokens_per_round(0.5, 2) == pytest.approx(1 + 0.5 + 0.25)


def test_trigram_view_shows_rows_and_fallbacks():
    target = load_checkpoint("target")
    s = Session(target, target.tokenizer.encode("ROMEO:\n"), Settings(drafter="trigram", k=6, min_context_count=5000))
    for _ in range(8):
        s.forward()
    frames = [charts.trigram_frame(r, target.tokenizer.chars) for r in s.rounds]
    rows = [row for f in frames for row in f.to_dict("records")]
    assert sum(len(f) for f in frames) == sum(len(r.draft_tokens) for r in s.rounds)
    fallbacks = [x for x in rows if x["row"] == "bigram"]
    assert fallbacks and all(pd.isna(x["evidence"]) or x["evidence"] < 5000 for x in fallbacks)
    assert all(f["evidence"].dtype == "Int64" for f in frames)  # shown as counts, not as floats
    assert all(x["evidence"] >= 5000 for x in rows if x["row"] == "trigram")


def test_every_figure_is_valid_plotly(run):
    """The charts skip plotly's validation for speed (charts/figure.py); validate them here."""
    import plotly.graph_objects as go

    s, vocab = run
    figs = [charts.kv_timeline(s.rounds, 2), charts.acceptance_chart(acceptance_by_position(s.rounds))]
    for r in s.rounds:
        figs += [charts.pq_bars(p, vocab) for p in r.positions] + [charts.kv_ledger(r)]
        figs.append(charts.residual_bars(r, vocab) if r.residual is not None else charts.bonus_bars(r, vocab))
    for fig in figs:
        go.Figure(fig.to_dict())  # raises ValueError on any unknown or ill-typed property


def test_a_subtitle_of_several_lines_wraps_as_a_subtitle():
    """Each line of a <sub> that holds a <br> stays a subtitle line, broken at its own width (SUB_CHARS),
    not the title's."""
    from specviz.charts.figure import SUB_CHARS, TITLE_CHARS, wrap

    sub = "one two three four five six seven eight nine ten eleven"  # longer than either width
    lines = wrap(f"Title<br><sub>{sub}<br>{sub}</sub>").split("<br>")
    assert lines[0] == "Title" and all(x.startswith("<sub>") and x.endswith("</sub>") for x in lines[1:])
    widths = [len(x[5:-6]) for x in lines[1:]]
    assert max(widths) <= SUB_CHARS and max(widths) > TITLE_CHARS and len(lines) == 5
    assert " ".join(x[5:-6] for x in lines[1:]) == f"{sub} {sub}"
