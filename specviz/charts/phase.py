"""The figure of a check phase (specviz/teaching/phases.py): the uniform draw against the acceptance
probability, on one line from 0 to 1. A candidate is accepted when u < min(1, p/q): the green part
of the line is where u lands for an accept (hatched orange: a reject), the diamond is the draw."""

import plotly.graph_objects as go

from specviz.charts.distributions import label
from specviz.charts.figure import bar, figure
from specviz.charts.palette import ACCEPTED, INK, REJECTED
from specviz.core.record import PositionRecord


def accept_test(pos: PositionRecord, vocab: list[str]) -> go.Figure:
    a = pos.accept_prob
    x = repr(label(vocab, pos.token))
    h = {"orientation": "h", "width": 0.5}
    data = [
        bar([a], ["u"], f"accept: u < {a:.3f}", marker={"color": ACCEPTED}, **h),
        bar([1 - a], ["u"], "reject", marker={"color": REJECTED, "pattern": {"shape": "/"}}, opacity=0.6, **h),
    ]
    if pos.u is None:
        title = f"Candidate {x}: greedy (T = 0), no draw: {'accepted' if pos.accepted else 'rejected'}"
    else:
        data.append({"type": "scatter", "x": [pos.u], "y": ["u"], "mode": "markers+text", "name": "the draw u",
                     "text": [f"u = {pos.u:.3f}"], "textposition": "top center",
                     "hovertemplate": "u = %{x:.3f}<extra></extra>",
                     "marker": {"symbol": "diamond", "size": 18, "color": INK}})  # fmt: skip
        op = "<" if pos.accepted else "≥"
        title = (
            f"Candidate {x}: u = {pos.u:.3f} {op} min(1, p/q) = {a:.3f}: {'accepted' if pos.accepted else 'rejected'}"
        )
    return figure(data, {"barmode": "stack", "height": 200, "margin": {"l": 30, "r": 10, "t": 50, "b": 30},
                         "title": {"text": title}, "xaxis": {"range": [0, 1], "title": {"text": "uniform draw"}},
                         "legend": {"orientation": "h", "y": -0.6}})  # fmt: skip
