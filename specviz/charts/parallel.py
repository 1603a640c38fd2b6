"""Parallel drafting's charts: the K slots one head pass filled (each slot's distribution, the token drawn,
which slots the target accepted), and the measured draft cost per round against K for the neural drafters
(one pass per token for a chain drafter: a line; one pass per round for the parallel one: flat)."""

import plotly.graph_objects as go

from specviz.charts.distributions import label
from specviz.charts.figure import LEGEND_BELOW, bar, figure
from specviz.charts.palette import ACCEPTED, BLUE, GREEN, GREY, ORANGE, PURPLE, REJECTED, SKY, VERMILLION
from specviz.core.markup import plotly_text

RANK_COLOURS = [BLUE, ORANGE, SKY, PURPLE]  # a slot's top tokens, rank 1, 2, ...
LINE_COLOURS = [ORANGE, SKY, PURPLE, BLUE, VERMILLION, GREEN]  # one per drafter on the cost chart
DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"]


def slot_verdicts(slots: int, accepted: int, checked: bool) -> list[str]:
    """What the target made of each slot: the first ``accepted`` kept, the next rejected (when the round's draft
    was verified), the rest never checked (the walk stopped before them)."""
    out = ["accepted" if s < accepted else "rejected" if s == accepted else "not checked" for s in range(slots)]
    return out if checked else ["not verified"] * slots


def slots_figure(notes: dict, accepted: int, vocab: list[str], checked: bool = True) -> go.Figure:
    """Grouped bars, one group per slot: its top tokens and their probabilities under the head (rank by colour
    and in the legend); above each group the slot's token (chains: the one drawn from its q) and what the
    target made of it. ``notes``: the drafter's notes (their "slots", by column: dflash.slot_notes),
    ``accepted``: slots accepted."""
    slots = notes["slots"]
    names = [f"slot {s + 1}" for s in range(len(slots["top"]))]
    width = max((len(row) for row in slots["top"]), default=0)
    data = []
    for rank in range(width):
        rows = [(name, t[rank], p[rank]) for name, t, p in zip(names, slots["top"], slots["p"], strict=True)
                if rank < len(t)]  # fmt: skip
        data.append(bar([n for n, _, _ in rows], [p for _, _, p in rows], f"rank {rank + 1}",
                        text=[plotly_text(label(vocab, t)) for _, t, _ in rows], textposition="outside",
                        marker={"color": RANK_COLOURS[rank % len(RANK_COLOURS)]},
                        hovertemplate="%{x}, rank " + str(rank + 1) + ": <b>%{text}</b> p=%{y:.3f}<extra></extra>"))  # fmt: skip
    colours = {"accepted": ACCEPTED, "rejected": REJECTED}
    notes_above = []
    drawn = slots.get("token") or [None] * len(names)
    verb = "drew" if slots.get("drawn", True) else "took"  # at T = 0 a chain's slot takes its top-1
    for name, x, verdict in zip(names, drawn, slot_verdicts(len(names), accepted, checked), strict=True):
        drew = "" if x is None else f"{verb} {plotly_text(label(vocab, x))}<br>"
        notes_above.append({"x": name, "y": 1.12, "yref": "y", "showarrow": False, "text": f"{drew}<b>{verdict}</b>",
                            "font": {"color": colours.get(verdict, GREY)}})  # fmt: skip
    layout = {"barmode": "group", "height": 340, "margin": {"t": 70, "b": 40, "l": 50, "r": 10},
              "title": {"text": f"{len(names)} slots filled in one head pass<br><sub>each slot's top "
                                f"{width} under the head; the target accepted {accepted}</sub>"},
              "yaxis": {"title": {"text": "head probability"}, "range": [0, 1.3]}, "annotations": notes_above,
              "legend": {"orientation": "h"}}  # fmt: skip
    return figure(data, layout)


def cost_by_k_figure(costs: dict[str, dict[int, float]]) -> go.Figure:
    """Lines of measured draft cost per round (target passes) against K, one per drafter: ``costs``
    {drafter: {K: cost}} (the page's caption says under what conditions). A chain drafter that runs its network once per token climbs; one pass per round stays flat."""
    data = []
    for i, (name, by_k) in enumerate(costs.items()):
        ks = sorted(by_k)
        data.append({"type": "scatter", "mode": "lines+markers", "name": name, "x": ks, "y": [by_k[k] for k in ks],
                     "line": {"color": LINE_COLOURS[i % len(LINE_COLOURS)], "dash": DASHES[i % len(DASHES)]},
                     "hovertemplate": name + ", K=%{x}: %{y:.2f} target passes<extra></extra>"})  # fmt: skip
    layout = {"height": 380, "margin": {"t": 90, "b": 40, "l": 50, "r": 10},
              "title": {"text": "Draft cost per round against K"},
              "xaxis": {"title": {"text": "K (tokens drafted per round)"}, "dtick": 1},
              "yaxis": {"title": {"text": "target passes"}, "rangemode": "tozero"},
              "legend": LEGEND_BELOW}  # fmt: skip
    return figure(data, layout)
