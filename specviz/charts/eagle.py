"""EAGLE's charts: what the head read in a round, and acceptance by draft depth per head."""

import re

import plotly.graph_objects as go

from specviz.charts.distributions import label
from specviz.charts.figure import bar, figure, nothing
from specviz.charts.palette import BLUE, GREY, ORANGE, PURPLE, SKY
from specviz.core.record import RoundRecord

# One colour and one hatch per series: colour is never the only cue.
STYLE = {"eagle1": (SKY, ""), "eagle3": (BLUE, "/"), "eagle3 no TTT": (ORANGE, "x"), "neural": (GREY, ".")}


def feature_rows(r: RoundRecord) -> list[dict]:
    """The rows the EAGLE head read this round (empty for another drafter)."""
    return r.draft_notes.get("feature_rows", []) if "head" in r.draft_notes else []


def features_heatmap(r: RoundRecord, vocab: list[str]) -> go.Figure:
    """Rows: the context entries fed this round (the target's features, fused for EAGLE-3), then each
    draft step's own fed-back state; columns: the first dimensions of each row."""
    rows = feature_rows(r)
    names = [f"entry {row['entry']} → {label(vocab, row['token'])}" if "entry" in row
             else f"step {row['step']}: own state, {label(vocab, row['token'])}" for row in rows]  # fmt: skip
    values = [row["values"] for row in rows]
    dims = len(values[0]) if values else 0
    n = r.draft_notes
    layers = ", ".join(map(str, n.get("layers", [])))
    what = f"fused features of blocks {layers}" if len(n.get("layers", [])) > 1 else f"the top feature, block {layers}"
    title = f"What the {n.get('head', 'EAGLE')} head read<br><sub>{what}; first {dims} of {n.get('width', '?')} dimensions</sub>"
    # Three ticks, set here: the lowest, 0 and the highest value the scale shows (plotly's own choice gave a
    # short bar one tick); the scale is symmetric about 0, so the ends are the largest magnitude either way.
    top = max((abs(v) for row in values for v in row), default=1.0) or 1.0
    bar = {"title": {"text": "value", "side": "right"}, "thickness": 14, "len": 1, "tickvals": [-top, 0, top],
           "ticktext": [f"{-top:.2g}", "0", f"{top:.2g}"]}  # fmt: skip
    data = [{"type": "heatmap", "z": values, "y": names, "x": list(range(dims)), "colorscale": "RdBu",
             "zmin": -top, "zmax": top, "colorbar": bar,
             "hovertemplate": "%{y}<br>dimension %{x}: %{z:.3f}<extra></extra>"}]  # fmt: skip
    return figure(data, {"title": {"text": title}, "height": max(260, 150 + 22 * len(rows)),  # room for 3 ticks
                         "margin": {"l": 10, "r": 10, "t": 40, "b": 30}, "xaxis": {"title": {"text": "dimension"}},
                         "yaxis": {"autorange": "reversed", "automargin": True}})  # fmt: skip


def conditions_text(conditions: str) -> str:
    """The measurement's conditions as a caption: its random seed named as the knob it is ("seed = 0"),
    never as "seed 0", which reads like a project's internal name."""
    return re.sub(r"\bseed (\d+)", r"random seed = \1", conditions)


def depth_figure(measured: dict, temperature: float) -> go.Figure:
    """Bars per series of specviz.training.eagle_depth.depth_acceptance: accepted / tried at each depth."""
    data = []
    for name, m in measured.items():
        colour, hatch = STYLE.get(name, (PURPLE, "-"))
        depths = list(range(1, len(m["rate"]) + 1))
        data.append(bar(depths, m["rate"], name, marker={"color": colour, "pattern": {"shape": hatch}},
                        customdata=list(zip(m["accepted"], m["tried"], strict=True)),
                        hovertemplate=f"{name}, depth %{{x}}: %{{y:.2f}} (%{{customdata[0]}}/%{{customdata[1]}})<extra></extra>"))  # fmt: skip
    when = "greedy" if temperature == 0 else f"T = {temperature}"
    if not data:
        return nothing(f"Acceptance by draft depth ({when})", "Nothing measured at this temperature.")
    return figure(data, {"title": {"text": f"Acceptance by draft depth<br><sub>{when}, K = {len(data[0]['x'])}</sub>"},
                         "barmode": "group", "height": 300, "margin": {"l": 40, "r": 10, "t": 80, "b": 30},
                         "xaxis": {"title": {"text": "draft depth"}, "dtick": 1},
                         "yaxis": {"title": {"text": "accepted / tried"}, "range": [0, 1.05]}})  # fmt: skip
