"""One way to make a figure: plain dicts in, a plotly Figure out, without plotly's per-property
validation. Building a figure through go.Bar/update_layout validates every property and cost
about 10 ms a figure, most of a round's render budget; the chart tests validate every figure
once instead (tests/test_charts.py)."""

import plotly.graph_objects as go


def figure(data: list[dict], layout: dict) -> go.Figure:
    return go.Figure({"data": data, "layout": layout}, _validate=False)


def bar(x, y, name: str, **kw) -> dict:
    return {"type": "bar", "x": list(x), "y": list(y), "name": name, **kw}


def arrow(x, y, text: str) -> dict:
    return {"x": x, "y": y, "text": text, "showarrow": True, "arrowhead": 2, "ay": -30}
