"""The draft tree of one round, for any drafter that sends trees: the root (the last context
token), every drafted node coloured by what verification did with it, and the accepted path.

It reads only the round record (tokens, parents, the tries), so a new tree drafter is drawn as
it is. Node identity is the draft index, never the token: a tree sampled with replacement may
hold the same token twice under one parent, and each copy is its own node with its own fate.
"""

import plotly.graph_objects as go

from specviz.charts.distributions import label
from specviz.charts.figure import figure
from specviz.charts.palette import INK, text_on
from specviz.charts.tree import ACCEPTED, REJECTED, ROOT, UNCHECKED, node_status
from specviz.core.markup import plotly_text
from specviz.core.record import RoundRecord

COLOUR = {"root": ROOT, "accepted": ACCEPTED, "rejected": REJECTED, "unchecked": UNCHECKED}


def layout(parents: list[int]) -> list[tuple[int, float]]:
    """(x, y) per slot, slot 0 the root and i + 1 node i: x is the depth, leaves take rows 0, 1, ...
    in depth-first order and a parent sits halfway between its first and last child."""
    kids: dict[int, list[int]] = {i: [] for i in range(len(parents) + 1)}
    for i, p in enumerate(parents):
        kids[p + 1].append(i + 1)
    pos: dict[int, tuple[int, float]] = {}
    leaf = 0
    stack = [(0, 0, False)]
    while stack:  # iterative post-order: deep chains never hit the recursion limit
        n, depth, done = stack.pop()
        if done or not kids[n]:
            if kids[n]:
                y = (pos[kids[n][0]][1] + pos[kids[n][-1]][1]) / 2
            else:
                y, leaf = float(leaf), leaf + 1
            pos[n] = (depth, y)
            continue
        stack.append((n, depth, True))
        stack.extend((c, depth + 1, False) for c in reversed(kids[n]))
    return [pos[i] for i in range(len(parents) + 1)]


def draft_tree_figure(r: RoundRecord, vocab: list[str], root_token: int) -> go.Figure:
    """The round's draft as a tree: a node per drafted token (hover: node index, q(x), p(x) and
    the try's outcome), the accepted path drawn thick and green from the root."""
    xy = layout(r.draft_parents)
    status = ["root"] + node_status(r)
    tries = {p.node: p for p in r.positions}
    on_path = {0} | {i + 1 for i in r.accepted_path}
    data = []
    for hot in (False, True):  # edges first, under the nodes; the accepted path on top
        xs, ys = [], []
        for i, parent in enumerate(r.draft_parents):
            if ((parent + 1) in on_path and (i + 1) in on_path) == hot:
                xs += [xy[parent + 1][0], xy[i + 1][0], None]
                ys += [xy[parent + 1][1], xy[i + 1][1], None]
        data.append({"type": "scatter", "x": xs, "y": ys, "mode": "lines", "hoverinfo": "skip", "showlegend": False,
                     "line": {"color": ACCEPTED if hot else "#999999", "width": 4 if hot else 1.5}})  # fmt: skip
    tokens = [root_token] + r.draft_tokens
    for kind in ("root", "accepted", "rejected", "unchecked"):
        slots = [i for i, s in enumerate(status) if s == kind]
        if not slots:
            continue
        info = []
        for i in slots:
            t = tries.get(i - 1)
            info.append(["root" if i == 0 else f"node {i - 1}",
                         "" if t is None else f"q(x)={t.q_x:.3f}, p(x)={t.p_x:.3f}, min(1, p/q)={min(1.0, t.ratio):.3f}"])  # fmt: skip
        data.append({
            "type": "scatter", "x": [xy[i][0] for i in slots], "y": [xy[i][1] for i in slots], "name": kind,
            "mode": "markers+text", "text": [plotly_text(label(vocab, tokens[i])) for i in slots],
            "textfont": {"color": text_on(COLOUR[kind]), "size": 14}, "customdata": info,
            "marker": {"size": 28, "color": COLOUR[kind], "line": {"width": 1, "color": INK}},
            "hovertemplate": "<b>%{text}</b> %{customdata[0]}<br>%{customdata[1]}<extra>" + kind + "</extra>",
        })  # fmt: skip
    leaves = int(max(y for _, y in xy)) + 1
    depth = max(x for x, _ in xy)
    title = (f"Draft tree: {len(r.draft_tokens)} nodes, {r.n_accepted} accepted<br><sub>Green: the accepted path."
             "<br>Grey: never checked (an ancestor was rejected,<br>or a sibling accepted first). Hover: q and p."
             "</sub>")  # fmt: skip
    return figure(data, {
        "title": {"text": title}, "height": min(900, max(320, 30 * leaves + 235)), "plot_bgcolor": "white",
        "margin": {"l": 10, "r": 10, "t": 135, "b": 10},
        "legend": {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom"},
        "xaxis": {"title": {"text": "depth (0 = the root: the last context token)", "standoff": 4}, "dtick": 1,
                  "range": [-0.5, depth + 0.5], "zeroline": False},
        "yaxis": {"visible": False, "range": [leaves - 0.4, -0.6]},  # reversed: the first leaf on top
    })  # fmt: skip


def shape_figure(tokens: list[int], parents: list[int], reach: list[float], vocab: list[str], root_token: int,
                 title: str) -> go.Figure:  # fmt: skip
    """A draft tree's shape, before any verification: a node per drafted token, shaded by ``reach``,
    the model's chance that verification accepts it (hover: its rank among its siblings, and that chance)."""
    xy = layout(parents)
    xs, ys = [], []
    for i, parent in enumerate(parents):
        xs += [xy[parent + 1][0], xy[i + 1][0], None]
        ys += [xy[parent + 1][1], xy[i + 1][1], None]
    ranks, seen = [], {}
    for p in parents:
        ranks.append(seen.get(p, 0))
        seen[p] = ranks[-1] + 1
    labels = [plotly_text(label(vocab, t)) for t in [root_token, *tokens]]
    data = [
        {"type": "scatter", "x": xs, "y": ys, "mode": "lines", "hoverinfo": "skip", "showlegend": False,
         "line": {"color": "#999999", "width": 1.5}},
        {"type": "scatter", "x": [x for x, _ in xy], "y": [y for _, y in xy], "mode": "markers+text",
         "text": labels, "showlegend": False, "textfont": {"size": 14, "color": INK},
         "customdata": [["root", ""]] + [[f"rank {r}", f"accepted with chance {a:.3f}"] for r, a in zip(ranks, reach,
                                                                                                      strict=True)],
         "marker": {"size": 28, "color": [1.0, *reach], "colorscale": [[0, "#F7F7F7"], [1, ACCEPTED]], "cmin": 0,
                    "cmax": 1, "line": {"width": 1, "color": INK}},
         "hovertemplate": "<b>%{text}</b> %{customdata[0]}<br>%{customdata[1]}<extra></extra>"},
    ]  # fmt: skip
    leaves = int(max(y for _, y in xy)) + 1
    depth = max(x for x, _ in xy)
    return figure(data, {
        "title": {"text": title}, "height": min(900, max(320, 30 * leaves + 150)), "plot_bgcolor": "white",
        "margin": {"l": 10, "r": 10, "t": 80, "b": 10},
        "xaxis": {"title": {"text": "depth", "standoff": 4}, "dtick": 1, "range": [-0.5, depth + 0.5],
                  "zeroline": False},
        "yaxis": {"visible": False, "range": [leaves - 0.4, -0.6]},
    })  # fmt: skip
