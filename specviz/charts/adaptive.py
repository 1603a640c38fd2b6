"""Adaptive K's choice for one round: expected characters per unit of time for every K it weighed,
the chosen K marked, with the expected characters and the cost behind each bar."""

import plotly.graph_objects as go

from specviz.charts.figure import bar, figure
from specviz.core.choice import MIN_GAIN, Choice

CHOSEN, OTHER = "#0072B2", "#999999"  # Okabe-Ito blue; grey


def k_choice_bars(choice: Choice) -> go.Figure:
    cands = choice.candidates()
    ks = [c["k"] for c in cands]
    data = [
        bar(ks, [c["tokens_per_cost"] for c in cands], "expected characters / cost",
            marker={"color": [CHOSEN if k == choice.k else OTHER for k in ks]},
            customdata=[[c["expected_tokens"], c["cost"]] for c in cands],
            hovertemplate="K=%{x}: %{customdata[0]:.2f} characters expected / cost %{customdata[1]:.2f} "
                          "target passes = %{y:.2f}<extra></extra>"),
    ]  # fmt: skip
    why = f"drafting must promise {MIN_GAIN:.2f}× K = 0's rate" if choice.k == 0 else "the highest bar"
    if choice.estimates:  # stopped token by token (adaptive.Stopper)
        stopped = len(choice.estimates) > choice.k
        why = "then no deeper K would pay" if stopped else f"as deep as allowed (K ≤ {choice.k_max})"
        shown = ", ".join(f"{a:.2f}" for a in choice.estimates[-3:])
        why = f"characters' chances of acceptance,<br>the last weighed: {shown};<br>{why}"
    # Short lines: the chart is ~300 px wide beside the text at 1024 px, and plotly does not wrap a title.
    title = (f"Adaptive K chose K = {choice.k}<br><sub>{why};<br>from past rounds: α = {choice.alpha:.2f} a level,"
             f"<br>{choice.per_level:.1f} drafted a level, {choice.draft_cost:.2f} passes a token"
             + (f"<br>+ {choice.level_cost:.2f} passes a level" if choice.level_cost else "") + "</sub>")  # fmt: skip
    more = 18 * (bool(choice.level_cost) + 2 * bool(choice.estimates))  # the title's extra lines
    layout = {"title": {"text": title, "yref": "container", "y": 0.97, "yanchor": "top"}, "height": 320 + more,
              "margin": {"l": 50, "r": 10, "t": 110 + more, "b": 40},
              "xaxis": {"title": {"text": "K"}, "dtick": 1}, "yaxis": {"title": {"text": "characters per target pass"}},
              "shapes": [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": 1, "y1": 1,
                          "line": {"dash": "dot", "color": "#555"}}]}  # fmt: skip
    return figure(data, layout)
