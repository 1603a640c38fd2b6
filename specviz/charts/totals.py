"""Acceptance rate by draft position: deeper positions are accepted less often, because a
position is only tried when every earlier one was accepted."""

import plotly.graph_objects as go

from specviz.charts.figure import bar, figure, nothing


def acceptance_chart(by_position: list[dict]) -> go.Figure:
    """``by_position``: rows of specviz.teaching.stats.acceptance_by_position."""
    by_position = [r for r in by_position if r["tried"]]
    if not by_position:
        return nothing("Acceptance by depth", "Nothing drafted yet: no depth has been tried.")
    data = [bar([r["depth"] for r in by_position], [r["rate"] for r in by_position], "accepted / tried",
                marker={"color": "#009E73"}, text=[f"{r['accepted']}/{r['tried']}" for r in by_position],
                textposition="outside")]  # fmt: skip
    return figure(data, {"title": {"text": "Acceptance by depth"}, "height": 260,
                         "margin": {"l": 40, "r": 10, "t": 40, "b": 30},
                         "xaxis": {"title": {"text": "draft position (depth)"}, "dtick": 1},  # depths are whole
                         "yaxis": {"title": {"text": "accepted / tried"}, "range": [0, 1.15]}})  # fmt: skip
