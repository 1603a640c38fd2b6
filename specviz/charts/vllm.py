"""The figures of a vLLM /metrics snapshot (specviz.teaching.vllm): acceptance by draft position against the
fitted a^i, the expected-tokens curve (1 - a^(K+1)) / (1 - a) through the measured mean acceptance length,
and the speedup each K would have had at the verify and draft costs a user enters."""

import math

import plotly.graph_objects as go

from specviz.charts.figure import PARITY_LINE, arrow, bar, figure, nothing, times_labels
from specviz.charts.palette import ACCEPTED, DARK_BLUE, GREY, SKY, VERMILLION, P
from specviz.core.markup import plotly_text
from specviz.teaching.stats import expected_tokens_per_round
from specviz.teaching.vllm import PER_POS, VllmSpecStats

MARGIN = {"l": 50, "r": 10, "t": 60, "b": 40}
# Labels side by side along x at 1024 px, full width and in a half-width column (the positions chart)
LABELLED, HALF = 16, 8


def _layout(title: str, sub: str, x: str, y: dict, n: int, **kw) -> dict:
    """``sub`` is escaped. ``n`` whole numbers along x, labelled 8 at most: more collide in a half-width column
    at 1024 px."""
    return {"title": {"text": f"{title}<br><sub>{plotly_text(sub)}</sub>"}, "height": 340, "margin": MARGIN,
            "xaxis": {"title": {"text": x}, "dtick": math.ceil(n / HALF)}, "yaxis": y,
            "legend": {"orientation": "h", "y": -0.3}, **kw}  # fmt: skip


def _line(x, y, name: str, colour: str, dash: str = "solid", mode: str = "lines+markers") -> dict:
    return {"type": "scatter", "mode": mode, "x": list(x), "y": list(y), "name": name,
            "line": {"color": colour, "dash": dash}, "marker": {"color": colour, "size": 8}}  # fmt: skip


def position_bars(stats: VllmSpecStats) -> go.Figure:
    """Rounds that kept their drafts up to each position over all rounds, against a^i from the fitted a."""
    title = "Acceptance by draft position"
    if not stats.accepted_per_pos:
        return nothing(title, f"This snapshot has no {PER_POS}:<br>older vLLM versions do not count by position.")  # fmt: skip
    x, a = list(range(1, stats.k + 1)), stats.alpha
    data = [
        bar(x, stats.by_position, "measured: accepted at i / drafts", marker={"color": ACCEPTED},
            **({"text": [f"{r:.2f}" for r in stats.by_position], "textposition": "inside"} if stats.k <= HALF else {}),
            customdata=[[c, stats.drafts] for c in stats.accepted_per_pos],
            hovertemplate="position %{x}: %{customdata[0]:,.0f} of %{customdata[1]:,.0f} rounds"),
        _line(x, [a**i for i in x], f"α^i, fitted α = {a:.3f}", VERMILLION, "dot"),
        _line(x, stats.conditional, "accepted at i / accepted at i − 1", DARK_BLUE, "dash"),
    ]  # fmt: skip
    y = {"title": {"text": "share of rounds"}, "range": [0, 1.05]}
    return figure(data, _layout(title, f"{stats.drafts:,.0f} rounds; 1 = the first drafted token",
                                "draft position i", y, stats.k))  # fmt: skip


def _cut(x, y) -> list[dict]:
    """vLLM's own rounds cut to each K (no model), as open circles; nothing without per-position counters."""
    points = [(a, b) for a, b in zip(x, y, strict=True) if b is not None]
    if not points:
        return []
    return [{"type": "scatter", "mode": "markers", "x": [a for a, _ in points], "y": [b for _, b in points],
             "name": "vLLM's rounds cut to K (no model)",
             "marker": {"color": DARK_BLUE, "size": 11, "symbol": "circle-open", "line": {"width": 2}}}]  # fmt: skip


def expected_curve(stats: VllmSpecStats, k_max: int) -> go.Figure:
    """(1 - a^(K+1)) / (1 - a) at the fitted a for K = 1..k_max, the measured mean at vLLM's K, and K + 1."""
    ks, a = list(range(1, k_max + 1)), stats.alpha
    data = [
        _line(ks, [expected_tokens_per_round(a, k) for k in ks], f"(1 − α^(K+1)) / (1 − α), α = {a:.3f}", P),
        _line(ks, [k + 1 for k in ks], "K + 1 (every draft accepted)", GREY, "dot", "lines"),
        *_cut(range(1, len(stats.cut_lengths) + 1), stats.cut_lengths),
        {"type": "scatter", "mode": "markers", "x": [stats.k], "y": [stats.mean_acceptance_length],
         "name": f"vLLM: {stats.mean_acceptance_length:.2f} tokens a round at K = {stats.k}",
         "marker": {"color": VERMILLION, "size": 14, "symbol": "diamond"}},
    ]  # fmt: skip
    y = {"title": {"text": "tokens per round"}, "rangemode": "tozero"}
    return figure(
        data, _layout("Mean acceptance length", "the curve through vLLM's point", "K (draft length)", y, k_max)
    )


def pays_bars(rows: list[dict], k_measured: int) -> go.Figure:
    """``rows``: specviz.teaching.vllm.k_that_pays. The speedup per K, vLLM's K marked by an arrow and its colour."""
    best = max(rows, key=lambda r: r["speedup"])
    ks = [r["k"] for r in rows]
    # a label a bar, at its foot (the tops carry the open circles), while they fit side by side
    labels = {**times_labels(r["speedup"] for r in rows), "textposition": "inside", "insidetextanchor": "start"}
    data = [bar(ks, [r["speedup"] for r in rows], "speedup E[tokens] / (c·K + v(K))",
                marker={"color": [VERMILLION if k == k_measured else SKY for k in ks]},
                **(labels if len(rows) <= LABELLED else {}), customdata=[[r["expected"], r["cost"]] for r in rows],
                hovertemplate="K = %{x}: %{customdata[0]:.2f} tokens for %{customdata[1]:.2f} passes"),
            *_cut(ks, [r["measured_speedup"] for r in rows])]  # fmt: skip
    y = {"title": {"text": "speedup × plain decoding"}, "rangemode": "tozero"}
    mine = [r for r in rows if r["k"] == k_measured]
    where = "the arrow" if mine else "off the chart"
    sub = f"best K = {best['k']} ({best['speedup']:.2f}×); vLLM's K = {k_measured}: {where}"
    arrows = [arrow(k_measured, max(mine[0]["speedup"], mine[0]["measured_speedup"] or 0), "vLLM's K")] if mine else []
    return figure(data, _layout("What K would have paid", sub, "K (draft length)", y, len(rows), shapes=[PARITY_LINE],
                                annotations=arrows))  # fmt: skip
