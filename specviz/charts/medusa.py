"""The medusa drafter's round: what each head proposed (its top-k tokens and their probabilities)
and, beside it, the candidate tree made from them (specviz/charts/draft_tree.py draws it)."""

import plotly.graph_objects as go

from specviz.charts.distributions import label
from specviz.charts.figure import bar, figure
from specviz.charts.palette import BLUE, GREEN, ORANGE, PURPLE, SKY, VERMILLION, YELLOW
from specviz.core.markup import plotly_text

RANK_COLOURS = [BLUE, ORANGE, GREEN, SKY, VERMILLION, PURPLE, YELLOW, BLUE]  # candidate rank 1, 2, ...


def heads_figure(notes: dict, vocab: list[str]) -> go.Figure:
    """Grouped bars: one group per head (head i = draft depth i), one bar per candidate, its height the
    head's probability and its label the character. Ranks are told apart by colour and by the
    rank in the hover and the legend."""
    heads = notes["heads"]
    width = max((len(row) for row in heads), default=0)
    data = []
    for rank in range(width):
        rows = [(i, row[rank]) for i, row in enumerate(heads) if rank < len(row)]
        data.append(bar([f"head {i + 1}" for i, _ in rows], [c["p"] for _, c in rows], f"candidate {rank + 1}",
                        text=[plotly_text(label(vocab, c["token"])) for _, c in rows], textposition="outside",
                        marker={"color": RANK_COLOURS[rank % len(RANK_COLOURS)]},
                        hovertemplate="%{x}, candidate " + str(rank + 1) + ": <b>%{text}</b> p=%{y:.3f}<extra></extra>"))  # fmt: skip
    layout = {"barmode": "group", "height": 300, "margin": {"t": 60, "b": 40, "l": 50, "r": 10},
              "title": {"text": f"Each head's top {notes.get('top_k', width)} (head i guesses depth i)"},
              "yaxis": {"title": {"text": "head probability"}, "range": [0, 1.1]}, "legend": {"orientation": "h"}}  # fmt: skip
    return figure(data, layout)
