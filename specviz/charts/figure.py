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


def times_labels(values) -> dict:
    """Bar labels "1.23×" above each bar (none for a missing value), drawn even where they pass the plot's top."""
    return {"text": [f"{v:.2f}×" if v is not None else "" for v in values], "textposition": "outside",
            "cliponaxis": False}  # fmt: skip


# The 1.0x line of a speedup chart. Under the bars and their labels, so a label near 1.0 reads on top of it.
PARITY_LINE = {"type": "line", "x0": 0, "x1": 1, "xref": "paper", "y0": 1, "y1": 1, "line": {"dash": "dot"},
               "layer": "below"}  # fmt: skip


def draws(x, values, name: str, color: str) -> dict:
    """Uniform draws as crosses, one per x that drew one (None: nothing was drawn there)."""
    drawn = [(xi, v) for xi, v in zip(x, values, strict=True) if v is not None]
    return {"type": "scatter", "mode": "markers", "x": [a for a, _ in drawn], "y": [b for _, b in drawn],
            "name": name, "marker": {"symbol": "x", "size": 11, "color": color}}  # fmt: skip


def probability_figure(data: list[dict], title: str, x_title: str) -> go.Figure:
    """Probabilities (0..1) over categorical x, titled with a subtitle line, the legend below."""
    return figure(data, {"title": {"text": title}, "height": 320, "margin": {"l": 50, "r": 10, "t": 60, "b": 40},
                         "xaxis": {"title": {"text": x_title}, "type": "category"},
                         "yaxis": {"title": {"text": "probability"}, "range": [0, 1.05]},
                         "legend": {"orientation": "h", "y": -0.3}})  # fmt: skip
