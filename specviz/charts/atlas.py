"""The atlas's chart: every method's measured speedup at T = 0 and T = 0.8, from one bench run,
lossy methods hatched (their speed is bought with exactness); and its two tables, the figures at
one of those temperatures and where each method's draft comes from.

The tables fit the page's ~560 px at 1024 px with the sidebar open, without scrolling sideways:
short headers (the help spells each out), one temperature at a time, and the prose in a table of
its own whose rows wrap."""

import pandas as pd
import plotly.graph_objects as go

from specviz.charts.figure import PARITY_LINE, bar, figure, sideways, times_labels
from specviz.charts.palette import BLUE, SKY
from specviz.core.markup import plotly_text


def speedup_figure(rows: list[dict]) -> go.Figure:
    """``rows``: specviz.teaching.atlas.atlas_rows; methods without a measured row are left out."""
    rows = [r for r in rows if r["speedup T=0"] is not None or r["speedup T=0.8"] is not None]
    names = [plotly_text(r["method"]) for r in rows]
    lossy = ["/" if r["lossless"] == "LOSSY" else "" for r in rows]
    data = [
        bar(names, [r[f"speedup T={T}"] for r in rows], f"T = {T}", marker={"color": colour, "pattern": {"shape": lossy}},
            **times_labels(r[f"speedup T={T}"] for r in rows))
        for T, colour in (("0", BLUE), ("0.8", SKY))
    ]  # fmt: skip
    return figure(*sideways(data, {"title": {"text": "Measured speedup over plain decoding<br><sub>hatched: lossy</sub>"},
                                   "barmode": "group", "margin": {"l": 10, "r": 10, "t": 60, "b": 10},
                                   "shapes": [PARITY_LINE], "yaxis": {"title": {"text": "× plain decoding"}},
                                   "legend": {"orientation": "h"}}))  # fmt: skip


TEMPERATURES = (0.0, 0.8)  # the bench's
# Figures table: header -> the atlas_rows key ({T}: the temperature picked), its help, its width in px.
# With METHOD_WIDTH and the link's OPEN_WIDTH, 536 px: the page's ~560 at 1024 px.
FIGURES = {
    "α": ("α T={T}", "Acceptance rate: accepted / drafted tokens checked, at the temperature picked (K = 4).", 44),
    "τ": ("τ T={T}", "Tokens per target forward pass at the temperature picked (K = 4): the speedup if drafting "
          "and a wider verification pass were free.", 44),
    "speedup": ("speedup T={T}", "Measured: plain decoding's time over this method's, same prompts, same run, at "
                "the temperature picked (K = 4).", 64),
    "auto K": ("speedup auto T={T}", "The speedup with adaptive K: the method's default configuration.", 56),
    "c": ("draft cost c", "Draft cost c: the time to draft one token, in target forward passes (measured "
          "at T = 0.8, whichever temperature is picked).", 40),
    "MB": ("memory MB", "Memory: what the method adds to plain decoding, its tables, heads, indices and caches, in "
           "MB (whichever temperature is picked).", 48),
}  # fmt: skip
FIGURE_HELP = {h: help for h, (_, help, _) in FIGURES.items()}
FIGURE_WIDTHS = {h: width for h, (_, _, width) in FIGURES.items()}
OPEN_HELP = "Its step page, on a preset that suits it."
METHOD_WIDTH, OPEN_WIDTH = 180, 60  # px: "eagle3-tree (traversal)"; the link's text, "step"
# Sources table: header -> help, width in px. Its rows wrap: every entry in three lines or fewer
# in these widths (562 px in all: the page at 1024 px) fits SOURCES_ROW_HEIGHT.
SOURCES = {
    "method": ("The drafter, and its verification rule when not the lossless one.", 106),
    "lossless": ("lossless: the output is distributed exactly as the target's. LOSSY: the rule trades that for "
                 "speed.", 62),
    "draft from": ("Where the draft comes from.", 220),
    "paper": ("The paper or blog post it follows.", 174),
}  # fmt: skip
SOURCES_ROW_HEIGHT = 66  # px: three lines; Streamlit wraps text only in rows taller than 4rem
SOURCE_HELP = {h: help for h, (help, _) in SOURCES.items()}
SOURCE_WIDTHS = {h: width for h, (_, width) in SOURCES.items()}


def figures_frame(rows: list[dict], temperature: float) -> pd.DataFrame:
    """``rows``: specviz.teaching.atlas.atlas_rows. One row per method: its figures at ``temperature`` (one of
    TEMPERATURES) under the FIGURES headers, and the link to its step page."""
    T = f"{temperature:g}"
    return pd.DataFrame(
        [{"method": r["method"], **{h: r[key.format(T=T)] for h, (key, _, _) in FIGURES.items()}, "open": r["open"]}
         for r in rows],
        columns=["method", *FIGURES, "open"],
    )  # fmt: skip


def sources_frame(rows: list[dict]) -> pd.DataFrame:
    """``rows``: specviz.teaching.atlas.atlas_rows. One row per method: what it is, in words."""
    return pd.DataFrame([{h: r[h] for h in SOURCES} for r in rows], columns=list(SOURCES))


def layer_sweep_figure(rows: list[dict], n_layer: int) -> go.Figure:
    """``rows``: specviz.bench.layer_sweep.acceptance_by_layers. Acceptance and tokens per pass against n."""
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
