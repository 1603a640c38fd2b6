"""The atlas's chart: every method's measured speedup at T = 0 and T = 0.8, from one bench run,
lossy methods hatched (their speed is bought with exactness)."""

import plotly.graph_objects as go

from specviz.charts.figure import PARITY_LINE, bar, figure, times_labels
from specviz.markup import plotly_text
from specviz.palette import BLUE, SKY


def speedup_figure(rows: list[dict]) -> go.Figure:
    """``rows``: specviz.atlas.atlas_rows; methods without a measured row are left out."""
    rows = [r for r in rows if r["speedup T=0"] is not None or r["speedup T=0.8"] is not None]
    names = [plotly_text(r["method"]) for r in rows]
    lossy = ["/" if r["lossless"] == "LOSSY" else "" for r in rows]
    data = [
        bar(names, [r[f"speedup T={T}"] for r in rows], f"T = {T}", marker={"color": colour, "pattern": {"shape": lossy}},
            **times_labels(r[f"speedup T={T}"] for r in rows))
        for T, colour in (("0", BLUE), ("0.8", SKY))
    ]  # fmt: skip
    return figure(data, {"title": {"text": "Measured speedup over plain decoding (hatched: lossy)"}, "barmode": "group",
                         "height": 380, "margin": {"l": 50, "r": 10, "t": 50, "b": 110}, "shapes": [PARITY_LINE],
                         "yaxis": {"title": {"text": "× plain decoding"}}, "xaxis": {"tickangle": -40},
                         "legend": {"orientation": "h", "y": 1.08, "x": 1, "xanchor": "right"}})  # fmt: skip
