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


def layer_sweep_figure(rows: list[dict], n_layer: int) -> go.Figure:
    """``rows``: specviz.layer_sweep.acceptance_by_layers. Acceptance and tokens per pass against n."""
    x = [f"{r['layers']} of {n_layer}" for r in rows]
    data = [
        bar(x, [r["acceptance"] for r in rows], "acceptance α", marker={"color": BLUE}, yaxis="y",
            text=[f"{r['acceptance']:.0%}" for r in rows], textposition="outside", cliponaxis=False, offsetgroup=0),
        bar(x, [r["tokens_per_forward"] for r in rows], "tokens per target pass", marker={"color": SKY,
            "pattern": {"shape": "."}}, yaxis="y2", text=[f"{r['tokens_per_forward']:.2f}" for r in rows],
            textposition="outside", cliponaxis=False, offsetgroup=1),
    ]  # fmt: skip
    return figure(data, {"title": {"text": "Layer-skip: the more of the target's layers draft, the more is accepted"},
                         "height": 320, "margin": {"l": 50, "r": 50, "t": 50, "b": 40}, "barmode": "group",
                         "xaxis": {"title": {"text": "draft layers n"}},
                         "yaxis": {"title": {"text": "acceptance"}, "range": [0, 1.1], "tickformat": ".0%"},
                         "yaxis2": {"title": {"text": "tokens per pass"}, "overlaying": "y", "side": "right",
                                    "rangemode": "tozero"},
                         "legend": {"orientation": "h", "y": -0.25}})  # fmt: skip
