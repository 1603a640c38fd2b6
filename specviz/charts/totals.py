"""Acceptance rate by draft position: deeper positions are accepted less often, because a
position is only tried when every earlier one was accepted."""

import plotly.graph_objects as go


def acceptance_chart(by_position: list[dict]) -> go.Figure:
    """``by_position``: rows of specviz.stats.acceptance_by_position."""
    fig = go.Figure()
    fig.add_bar(x=[r["depth"] for r in by_position], y=[r["rate"] for r in by_position], marker_color="#10b981",
                text=[f"{r['accepted']}/{r['tried']}" for r in by_position], textposition="outside",
                name="accepted / tried")  # fmt: skip
    fig.update_layout(title="Acceptance rate by draft position", height=260, margin=dict(l=40, r=10, t=40, b=30),
                      xaxis_title="draft position (depth)", yaxis=dict(title="accepted / tried", range=[0, 1.15]))  # fmt: skip
    return fig
