"""The acceptance-math toy's figures (specviz.teaching.toy): p against q with the accepted overlap, the
residual, the simulated output against p, its convergence, and the expected tokens per round.
Tokens are numbered 0..V-1: the toy has no characters. Same colours as the round's charts."""

import math

import plotly.graph_objects as go
import torch

from specviz.charts.distributions import DRAW_COLOUR, MIN_COLOUR, P_COLOUR, Q_COLOUR, _layout
from specviz.charts.figure import bar, figure
from specviz.teaching.toy import Overlap

EXACT_COLOUR, BIASED_COLOUR, GREY = "#009E73", "#CC79A7", "#999999"
MARGIN = {"l": 40, "r": 10, "t": 50, "b": 30}


def _tokens(title: str, V: int, **layout) -> dict:
    """The round charts' layout, with a token axis numbered 0..V-1."""
    xaxis = {
        "title": {"text": "token"},
        "tickmode": "linear",
        "dtick": max(1, V // 8),
    }  # 8 labels: more collide in a column at 1024 px
    margin = {**MARGIN, "b": 40}  # room for the token axis's title above the legend
    return {**_layout(title, []), "xaxis": xaxis, "margin": margin, "legend": {"orientation": "h", "y": -0.3}, **layout}


def overlap_bars(p: torch.Tensor, q: torch.Tensor, o: Overlap) -> go.Figure:
    """p and q side by side per token, min(p, q) hatched across both: the mass accepted as drafted."""
    x = range(len(p))
    data = [
        bar(x, p.tolist(), "p (target)", marker={"color": P_COLOUR}, width=0.4, offset=-0.42),
        bar(x, q.tolist(), "q (draft)", marker={"color": Q_COLOUR}, width=0.4, offset=0.02),
        bar(x, o.overlap.tolist(), "min(p, q)", width=0.9, offset=-0.45,
            marker={"color": MIN_COLOUR, "pattern": {"shape": "x", "fgcolor": "#00664A"}}),
    ]  # fmt: skip
    title = (
        f"p and q: α = Σ min(p, q) = {o.alpha:.4f}<br><sub>a draft is accepted with probability α = 1 − TV(p, q)</sub>"
    )
    return figure(data, _tokens(title, len(p)))


def residual_bars(o: Overlap) -> go.Figure:
    """max(0, p - q) (what the draft under-proposes) and the residual it normalises to."""
    x = range(len(o.excess))
    data = [bar(x, o.excess.tolist(), "max(0, p − q)", marker={"color": DRAW_COLOUR})]
    if o.residual is None:
        return figure(data, _tokens("No residual: p = q, so no draft is ever rejected", len(x)))
    data.insert(0, bar(x, o.residual.tolist(), "residual norm(max(0, p − q))", marker={"color": DRAW_COLOUR},
                       opacity=0.4))  # fmt: skip
    # Short lines: at 1024 px the chart is ~300 px wide, and plotly does not wrap a title.
    title = f"Residual: mass 1 − α = {1 - o.alpha:.4f}<br><sub>max(0, p − q), normalised to sum to 1</sub>"
    return figure(data, _tokens(title, len(x)))


def histogram_bars(freq: torch.Tensor, p: torch.Tensor, n: int, tv: float) -> go.Figure:
    """The simulated outputs' frequencies, p as markers on top."""
    x = list(range(len(p)))
    data = [
        bar(x, freq.tolist(), f"output frequency ({n:,} steps)", marker={"color": MIN_COLOUR,
            "line": {"color": "#00664A", "width": 1}}),
        {"type": "scatter", "x": x, "y": p.tolist(), "mode": "markers", "name": "p (target)",
         "marker": {"color": P_COLOUR, "symbol": "line-ew-open", "size": 14, "line": {"width": 3}}},
    ]  # fmt: skip
    return figure(data, _tokens(f"Simulated output against p<br><sub>TV = {tv:.4f} after {n:,} steps</sub>", len(p)))


def _line(x, y, name: str, colour: str, **kw) -> dict:
    return {"type": "scatter", "x": list(x), "y": list(y), "name": name, "mode": "lines", "line": {"color": colour},
            **kw}  # fmt: skip


def _plot(title: str, xaxis: dict, yaxis: dict, **layout) -> dict:
    return {"title": {"text": title}, "height": 320, "margin": MARGIN, "xaxis": xaxis, "yaxis": yaxis,
            "legend": {"orientation": "h", "y": -0.3}, **layout}  # fmt: skip


def convergence_chart(curves: dict[str, list[tuple[int, float]]], limits: dict[str, float]) -> go.Figure:
    """TV(histogram, p) against the number of steps, log-log, one line per rule; ``limits`` are the
    exact TV each rule tends to (0 for a rule that is exact), drawn dotted where it is not."""
    data = []
    for (name, points), colour in zip(curves.items(), [EXACT_COLOUR, BIASED_COLOUR], strict=False):
        data.append(_line([n for n, _ in points], [t for _, t in points], name, colour, mode="lines+markers"))
        if limits[name] > 1e-9:  # an exact rule's limit is 0 up to rounding: nothing to draw
            ends = [points[0][0], points[-1][0]]
            data.append(_line(ends, [limits[name]] * 2, f"its limit, TV = {limits[name]:.4f}", colour,
                              line={"color": colour, "dash": "dot"}))  # fmt: skip
    ends = [10, max(points[-1][0] for points in curves.values())]
    data.append(_line(ends, [1 / math.sqrt(n) for n in ends], "1/√n (the scale of sampling noise)", GREY,
                      line={"color": GREY, "dash": "dash"}))  # fmt: skip
    # One tick per decade: plotly's default also labels 2 and 5 in each, which collide at projector widths.
    layout = _plot("TV(output histogram, p)<br><sub>as the steps add up</sub>",
                   {"type": "log", "dtick": 1, "tickformat": ",d", "title": {"text": "steps"}},
                   {"type": "log", "dtick": 1, "title": {"text": "TV distance to p"}})  # fmt: skip
    return figure(data, layout)


def tokens_per_round_chart(rows: list[dict], alpha: float) -> go.Figure:
    """``rows``: specviz.teaching.toy.per_k. Expected (1 − α^(K+1))/(1 − α), measured, and the K + 1 ceiling."""
    k = [r["k"] for r in rows]
    data = [bar(k, [r["expected"] for r in rows], "expected (1 − α^(K+1)) / (1 − α)", marker={"color": P_COLOUR},
                text=[f"{r['expected']:.2f}" for r in rows], textposition="inside")]  # fmt: skip
    if "measured" in rows[0]:
        data.append({"type": "scatter", "x": k, "y": [r["measured"] for r in rows], "mode": "markers",
                     "name": "measured in the simulation", "marker": {"color": DRAW_COLOUR, "size": 10,
                     "symbol": "diamond"}})  # fmt: skip
    data.append(_line(k, [r["most"] for r in rows], "K + 1 (every draft accepted)", GREY,
                      line={"color": GREY, "dash": "dot"}))  # fmt: skip
    layout = _plot(f"Tokens per round (one target forward pass) at α = {alpha:.3f}",
                   {"title": {"text": "K (draft length)"}, "dtick": 1}, {"title": {"text": "tokens per round"}})  # fmt: skip
    return figure(data, layout)
