"""Speculation under load: a drafter's speedup over plain decoding against the batch size, measured by the
batch bench (specviz/bench/batch.py), with its crossover marked (where the speedup falls through 1); and the
roofline beside it: this CPU's attainable flop/s against a pass's arithmetic intensity, with each batch
size's passes placed on it (specviz/bench/roofline.py)."""

import math

import plotly.graph_objects as go

from specviz.bench.batch import crossover
from specviz.charts.figure import LEGEND_BELOW, PARITY_LINE, figure, nothing
from specviz.charts.palette import (
    BLUE,
    DARK_BLUE,
    DARK_GREEN,
    DARK_ORANGE,
    GREEN,
    GREY,
    ORANGE,
    PURPLE,
    SKY,
    VERMILLION,
)
from specviz.core.markup import plotly_text
from specviz.drafters import BASELINE

# One per line (the character model's drafters, then a real model's), each with its own marker and dash (colour
# never alone)
SERIES = (BLUE, ORANGE, PURPLE, SKY, GREEN, DARK_ORANGE, DARK_BLUE, DARK_GREEN)
MARKERS = ("circle", "square", "diamond", "triangle-up", "star", "hexagon", "pentagon", "cross")
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot", "solid", "dash")
LABEL_GAP = 0.25  # decades between two "B=" labels on the roofline: ~40 px at 1024x768, wider than "B=64"
NOTE_LINE = 17  # px a line of the crossover note takes, at the charts' font size


def _drafters(rows: list[dict], model: str | None = None) -> list[str]:
    """The drafters of ``model``'s batch rows (None: the character model's), plain decoding left out."""
    names = (r["drafter"] for r in rows if r.get("suite") == "batch" and r.get("model") == model)
    return [d for d in dict.fromkeys(names) if d != BASELINE]


def _series(rows: list[dict]) -> list[tuple[str | None, str]]:
    """(model, drafter) of every line: the character model's drafters, then each real model's (bench --model)."""
    models = dict.fromkeys(r.get("model") for r in rows if r.get("suite") == "batch")
    return [(m, d) for m in sorted(models, key=lambda m: (m is not None, m or "")) for d in _drafters(rows, m)]


def crossover_figure(rows: list[dict], title: str = "Speedup over plain decoding, by batch size") -> go.Figure:
    """``rows``: the batch bench's rows (suite "batch"). One line per drafter at fixed K, the speedup (median
    over repeats, the min-max range as error bars) at each batch size, 1.0 dotted, each crossover marked; and,
    where the rows have them, a thin line per drafter with adaptive K priced for the batch."""
    series = _series(rows)
    if not series:
        return nothing(title, "No batch bench rows: python -m specviz bench --batch 1,2,4,8,16,32,64")
    data, notes = [], []
    for i, (m, name) in enumerate(series):
        ours = [r for r in rows if r.get("model") == m]  # a real model's rows are lines of their own
        # A model's name is the user's path: text, not HTML, and read into hover text from the trace's meta, never
        # written into a hovertemplate, where a "%{y}" in a folder's name would be read as a field
        d = plotly_text(name if m is None else f"{name} ({m})")
        auto = sorted((r["batch"], r["speedup"]) for r in ours if r.get("suite") == "batch" and r["drafter"] == name
                      and r.get("k_auto", False))  # fmt: skip
        if auto:
            c = SERIES[i % len(SERIES)]
            data.append({"type": "scatter", "mode": "lines+markers", "x": [b for b, _ in auto],
                         "y": [s for _, s in auto], "name": f"{d}, adaptive K", "opacity": 0.6,
                         "line": {"color": c, "dash": "dot", "width": 1.5},
                         "marker": {"symbol": MARKERS[i % len(MARKERS)] + "-open", "size": 8, "color": c}, "meta": d,
                         "hovertemplate": "%{meta}, adaptive K, at B = %{x}: %{y:.2f}×<extra></extra>"})  # fmt: skip
        pts = sorted((r["batch"], r) for r in ours if r.get("suite") == "batch" and r["drafter"] == name
                     and not r.get("k_auto", False))  # fmt: skip
        xs, ys = [b for b, _ in pts], [r["speedup"] for _, r in pts]
        up = [r["speedup_max"] - r["speedup"] for _, r in pts]
        down = [r["speedup"] - r["speedup_min"] for _, r in pts]
        c = SERIES[i % len(SERIES)]
        data.append({"type": "scatter", "mode": "lines+markers", "x": xs, "y": ys, "name": d,
                     "line": {"color": c, "dash": DASHES[i % len(DASHES)]},
                     "marker": {"symbol": MARKERS[i % len(MARKERS)], "size": 9, "color": c},
                     "error_y": {"type": "data", "array": up, "arrayminus": down, "color": c, "thickness": 1},
                     "customdata": [r["tokens_per_forward"] for _, r in pts], "meta": d,
                     "hovertemplate": "%{meta} at B = %{x}: %{y:.2f}× (τ %{customdata:.2f})<extra></extra>"})  # fmt: skip
        b = crossover(rows, name, model=m)
        if b is not None:
            data.append({"type": "scatter", "mode": "markers", "x": [b], "y": [1.0], "name": f"{d}: crossover",
                         "showlegend": False, "marker": {"symbol": "x", "size": 14, "color": VERMILLION}, "meta": d,
                         "hovertemplate": f"%{{meta}} crossover: B ≈ {b:.1f}<extra></extra>"})  # fmt: skip
            notes.append(f"{d}: B ≈ {b:.0f}")
    # The crossovers named together above the plot's top right corner, beside the title: labels at the marks
    # themselves pile up where two drafters cross at nearby B, and inside the plot a fast drafter's line and its
    # bars can reach any corner. The top margin grows with the lines the note needs.
    corner = [{"x": 1, "y": 1, "xref": "paper", "yref": "paper", "xanchor": "right", "yanchor": "bottom",
               "align": "right", "showarrow": False, "text": "× crossover<br>" + "<br>".join(notes),
               "font": {"color": VERMILLION}}] if notes else []  # fmt: skip
    top = max(70, NOTE_LINE * (len(notes) + 1) + 12) if notes else 70
    layout = {"title": {"text": title + "<br><sub>above 1: speculation pays; × marks where it stops</sub>"},
              "height": 310 + top, "margin": {"l": 50, "r": 10, "t": top, "b": 40},
              "xaxis": {"title": {"text": "sequences decoded together (B)"}, "type": "log", "dtick": 0.30103},
              "yaxis": {"title": {"text": "speedup (×)"}, "rangemode": "tozero"},
              "shapes": [PARITY_LINE], "annotations": corner, "legend": dict(LEGEND_BELOW)}  # fmt: skip
    return figure(data, layout)


def roofline_figure(roof, rows: list[dict], context: float, title: str = "The roofline of this CPU") -> go.Figure:
    """``roof``: a specviz.bench.roofline.Roofline; each batch row's decoding pass placed at its arithmetic
    intensity and the rate the roofline allows there (attainable flop/s = min(peak, intensity x bandwidth)).
    The roofline's passes are the character model's: a real model's rows are left out."""
    rows = [r for r in rows if r.get("model") is None]
    series = []  # (drafter, [(B, intensity of its pass)])
    for d in [BASELINE, *_drafters(rows)]:
        pts = sorted((r["batch"], r) for r in rows if r.get("suite") == "batch" and r["drafter"] == d
                     and not r.get("k_auto", False))  # fmt: skip
        if pts:
            series.append((d, [(b, roof.intensity(round(r["rows_per_pass"]), b, round(context))) for b, r in pts]))
    every = [a for _, pts in series for _, a in pts] or [1.0]
    lo = 10 ** math.floor(math.log10(min(every) / 2))  # whole decades around the passes and the ridge
    hi = 10 ** math.ceil(math.log10(max(*every, roof.ridge) * 3))
    xs = [lo * (hi / lo) ** (i / 60) for i in range(61)]
    data = [{"type": "scatter", "mode": "lines", "x": xs, "y": [min(roof.peak_flops, x * roof.bandwidth) / 1e9
                                                                 for x in xs],
             "name": "roofline", "line": {"color": GREY}, "hoverinfo": "skip"}]  # fmt: skip
    for i, (d, pts) in enumerate(series):
        ai = [a for _, a in pts]
        c = GREY if d == BASELINE else SERIES[(i - 1) % len(SERIES)]
        name = "plain decoding" if d == BASELINE else d
        # B written beside plain decoding's points, LABEL_GAP apart at least (the points bunch up at the ridge, where
        # the KV cache's reads grow with the rows); every point says its B on hover
        text, last = [], -math.inf
        for b, a in pts:
            keep = d == BASELINE and math.log10(a) - last >= LABEL_GAP
            text.append(f"B={b}" if keep else "")
            last = math.log10(a) if keep else last
        data.append({"type": "scatter", "mode": "markers+text", "x": ai,
                     "y": [min(roof.peak_flops, a * roof.bandwidth) / 1e9 for a in ai],
                     "text": text, "textposition": "top center", "name": name,
                     "customdata": [b for b, _ in pts],
                     "marker": {"symbol": MARKERS[i % len(MARKERS)], "size": 9, "color": c},
                     "hovertemplate": name + " at B = %{customdata}: %{x:.1f} flop/byte<extra></extra>"})  # fmt: skip
    sub = (f"peak {roof.peak_flops / 1e9:.0f} Gflop/s, {roof.bandwidth / 1e9:.1f} GB/s, ridge "
           f"{roof.ridge:.1f} flop/byte: measured here")  # fmt: skip
    layout = {"title": {"text": f"{title}<br><sub>{sub}</sub>"}, "height": 380,
              "margin": {"l": 50, "r": 10, "t": 70, "b": 40},
              # a tick a decade: plotly's in-between "2" and "5" are drawn at 9 px, too small for a projector
              "xaxis": {"title": {"text": "arithmetic intensity of a pass (flop/byte)"}, "type": "log", "dtick": 1},
              "yaxis": {"title": {"text": "attainable Gflop/s"}, "type": "log", "dtick": 1,
                        # a third of a decade over the peak: room for the labels of the passes on it
                        "range": [math.log10(lo * roof.bandwidth / 1e9), math.log10(roof.peak_flops / 1e9) + 0.33]},
              "shapes": [{"type": "line", "x0": roof.ridge, "x1": roof.ridge, "y0": 0, "y1": 1, "yref": "paper",
                          "line": {"dash": "dot", "color": GREY}}],
              "legend": dict(LEGEND_BELOW)}  # fmt: skip
    return figure(data, layout)
