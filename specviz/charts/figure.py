"""One way to make a figure: plain dicts in, a plotly Figure out, without plotly's per-property
validation. Building a figure through go.Bar/update_layout validates every property and cost
about 10 ms a figure, most of a round's render budget; the chart tests validate every figure
once instead (tests/unit/test_charts.py)."""

import re

import plotly.graph_objects as go

# The smallest chart text that reads on a projector from the back of a classroom, in pixels.
MIN_FONT = 12
# A horizontal legend on a line of its own at the figure's bottom: plotly reserves the room for it
# below the axes' tick labels and title (a legend at a paper y below the axis lands on them).
LEGEND_BELOW = {"orientation": "h", "x": 0, "xanchor": "left", "yref": "container", "y": 0, "yanchor": "bottom"}


# Characters per title line: ~300 px, the narrowest column a chart sits in at 1024 px, at the title's
# 15 px bold (34) and the second line's 12 px (44).
TITLE_CHARS, SUB_CHARS = 34, 44


def _wrap_line(line: str, limit: int) -> list[str]:
    out = [""]
    for word in line.split(" "):
        seen = len(re.sub(r"<[^>]*>", "", out[-1] + " " + word))
        out[-1:] = [out[-1], word] if out[-1] and seen > limit else [f"{out[-1]} {word}".strip()]
    return out


def wrap(title: str) -> str:
    """``title``'s lines (<br>) broken at spaces to fit a 300 px column; a <sub> line stays <sub>, and so
    does each line of a <sub> that holds a <br>."""
    title = re.sub(r"<sub>(.*?)</sub>", lambda m: "<sub>" + m[1].replace("<br>", "</sub><br><sub>") + "</sub>", title)
    lines = []
    for line in title.split("<br>"):
        sub = line.startswith("<sub>") and line.endswith("</sub>") and line.count("<sub>") == 1
        inner = line[5:-6] if sub else line
        parts = _wrap_line(inner, SUB_CHARS if sub else TITLE_CHARS)
        lines += [f"<sub>{p}</sub>" for p in parts] if sub else parts
    return "<br>".join(lines)


def classroom(layout: dict) -> dict:
    """``layout`` with what every chart needs to fit at 1024 px: axes that make room for their tick
    labels and titles, a title (two lines at most, its second in <sub>) that pushes the plot down
    rather than running into it, a horizontal legend on its own line below, text of MIN_FONT px or more."""
    out = dict(layout)
    out["font"] = {"size": MIN_FONT + 1, **out.get("font", {})}
    out.setdefault("uniformtext", {"minsize": MIN_FONT, "mode": "show"})  # bar labels never shrink below it
    for key, axis in layout.items():
        if key[:5] in ("xaxis", "yaxis") and isinstance(axis, dict):
            out[key] = {"automargin": True, **axis}
    if not any(k[:5] == "xaxis" for k in layout):
        out["xaxis"] = {"automargin": True}
    if not any(k[:5] == "yaxis" for k in layout):
        out["yaxis"] = {"automargin": True}
    if isinstance(title := layout.get("title"), dict) and title.get("text"):
        # <sub> draws at 70 % of the title's size, under MIN_FONT: a subtitle line is MIN_FONT instead
        text = (
            wrap(title["text"]).replace("<sub>", f"<span style='font-size:{MIN_FONT}px'>").replace("</sub>", "</span>")
        )
        title = {**title, "text": text}
        top = any(isinstance(a, dict) and a.get("side") == "top" for k, a in layout.items() if k[:5] == "xaxis")
        # Anchored by its last line just above the plot, a title of any number of lines grows upwards and
        # pushes the top margin (anchored at the figure's top, plotly lets the lines above the first rise
        # out of the figure), clear of the top tick label; over an axis drawn on top, it stays at the figure's top in its own margin.
        where = {} if top else {"yref": "paper", "y": 1, "yanchor": "bottom", "automargin": True, "pad": {"b": 22}}
        out["title"] = {**where, **title, "font": {"size": MIN_FONT + 3, **title.get("font", {})}}
    legend = layout.get("legend")
    if isinstance(legend, dict) and legend.get("orientation") == "h" and legend.get("yref") != "container":
        out["legend"] = {**LEGEND_BELOW, **{k: v for k, v in legend.items() if k not in ("x", "y", "yanchor")}}
    return out


def figure(data: list[dict], layout: dict) -> go.Figure:
    # A bar's label stays level: plotly turns one that does not fit its bar on its side
    data = [{"textangle": 0, **d} if d.get("type") == "bar" and "text" in d else d for d in data]
    # An arrow's label above the tallest bar needs room under the title: the axis reaches 1.4x the bars
    arrows = any(a.get("showarrow") and a.get("yref", "y") == "y" for a in layout.get("annotations", []))
    tops = [v for d in data if d.get("type") == "bar" for v in d.get("y", []) if isinstance(v, int | float)]
    if arrows and tops and "range" not in layout.get("yaxis", {}):
        layout = {**layout, "yaxis": {**layout.get("yaxis", {}), "range": [0, max(tops) * 1.4]}}
    return go.Figure({"data": data, "layout": classroom(layout)}, _validate=False)


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
            "name": name, "marker": {"symbol": "x", "size": 11, "color": color},
            "hovertemplate": "%{x}: %{y:.3f}"}  # fmt: skip


def probability_figure(data: list[dict], title: str, x_title: str) -> go.Figure:
    """Probabilities (0..1) over categorical x, titled with a subtitle line, the legend below; room
    above 1 for an arrow's label (arrow), which would otherwise run into the title."""
    return figure(data, {"title": {"text": title}, "height": 320, "margin": {"l": 50, "r": 10, "t": 60, "b": 40},
                         "xaxis": {"title": {"text": x_title}, "type": "category"},
                         "yaxis": {"title": {"text": "probability"}, "range": [0, 1.35], "tickvals": [0, 0.5, 1]},
                         "legend": {"orientation": "h", "y": -0.3}})  # fmt: skip


# The 1.0x line of a speedup chart drawn sideways (bars along x).
PARITY_LINE_X = {**PARITY_LINE, "x0": 1, "x1": 1, "xref": "x", "y0": 0, "y1": 1, "yref": "paper"}


def sideways(data: list[dict], layout: dict) -> tuple[list[dict], dict]:
    """Grouped bars over many named categories turned on their side: the names read level on the
    y axis at any width (at 1024 px, 17 names under upright bars were cut or overlapped), and each
    bar's label sits past its end. The first category stays on top."""
    swap = {"%{x}": "%{y}", "%{y": "%{x"}  # the hover's name and value trade axes too
    data = [{**d, "x": d["y"], "y": d["x"], "orientation": "h",
             **({"hovertemplate": re.sub(r"%\{x\}|%\{y", lambda m: swap[m[0]], d["hovertemplate"])}
                if "hovertemplate" in d else {}), **({"textposition": "outside"} if "text" in d else {})}
            if d.get("type") == "bar" else d for d in data]  # fmt: skip
    names = max((len(d["y"]) for d in data if d.get("type") == "bar"), default=1)
    series = sum(1 for d in data if d.get("type") == "bar")
    x, y = layout.get("xaxis", {}), layout.get("yaxis", {})
    ends = [v for d in data if d.get("type") == "bar" for v in d["x"] if isinstance(v, int | float)]
    if ends and any("text" in d for d in data):  # room past the longest bar for its label ("1.23×")
        y = {**y, "range": [0, max(ends) * 1.3]}
    shapes = [PARITY_LINE_X if s is PARITY_LINE else s for s in layout.get("shapes", [])]
    return data, {**layout, "height": 140 + names * (8 + 17 * series), "shapes": shapes,
                  "xaxis": dict(y),
                  "yaxis": {**{k: v for k, v in x.items() if k != "tickangle"}, "autorange": "reversed",
                            "type": "category"}}  # fmt: skip


def finish(fig: go.Figure) -> go.Figure:
    """A figure built with plotly's own methods (subplots, add_scatter), given classroom's layout."""
    out = fig.to_plotly_json()
    return figure(out["data"], out["layout"])


def nothing(title: str, why: str, height: int = 160) -> go.Figure:
    """A chart with nothing to draw: its title, and a sentence saying why, in place of empty axes."""
    hidden = {"visible": False}
    return figure([], {"title": {"text": title}, "height": height, "margin": {"l": 10, "r": 10, "t": 40, "b": 10},
                       "xaxis": hidden, "yaxis": hidden,
                       "annotations": [{"text": why, "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5,
                                        "showarrow": False}]})  # fmt: skip
