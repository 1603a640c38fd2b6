"""Lookahead decoding's round (specviz/drafters/lookahead.py): the Jacobi window that rode in the
verify pass, the pool's candidates, how far the verified branch went, and what sampling costs.
Pure functions of a RoundRecord; the round's drafter notes hold the window and the candidates."""

import plotly.graph_objects as go

from specviz.charts.distributions import label, label_text
from specviz.charts.figure import figure
from specviz.charts.palette import ACCEPTED, GREY, INK, MUTED, REJECTED, P, Q
from specviz.core.record import RoundRecord


def is_lookahead(r: RoundRecord) -> bool:
    return "window" in r.draft_notes


def candidate_rows(r: RoundRecord, vocab: list[str]) -> list[dict]:
    """One row per candidate n-gram: its text, where the pool got it, and how many of its tokens
    the round accepted (the common prefix of its continuation, cut to K, with the accepted path)."""
    accepted = [r.draft_tokens[i] for i in r.accepted_path]
    rows = []
    for c in r.draft_notes.get("candidates", []):
        rest = c["ngram"][1:]
        n = 0
        while n < min(len(rest), len(accepted)) and rest[n] == accepted[n]:
            n += 1
        rows.append({"n-gram": label_text(vocab, c["ngram"]), "source": c["source"], "accepted": n})
    return rows


def sampling_cost(r: RoundRecord) -> dict:
    """The candidates the target tried that were its own greedy choice (the argmax of the row they
    met): at T = 0 each is accepted; at T > 0 only with probability p(x). -> counts and the mean."""
    greedy = [c for c in r.positions if c.u is not None and int(c.p.argmax()) == c.token]
    mean = sum(c.accept_prob for c in greedy) / len(greedy) if greedy else None
    return {"greedy_guesses": len(greedy), "mean_accept": mean, "accepted": sum(c.accepted for c in greedy)}


def window_figure(r: RoundRecord, vocab: list[str]) -> go.Figure:
    """The window as the verify pass saw it: cell (j, i) at x = its offset after the root, y = its
    level (Jacobi step, oldest at the bottom), and above it the new guesses the pass made. Cells
    the round's emitted text confirms are green; columns that did not run are grey (no room left in
    the context window, or, with adaptive K, no candidate for the window to ride with)."""
    n = r.draft_notes
    levels, cols = n["window"], n["columns_run"]
    truth = {1 + t: tok for t, tok in enumerate(r.emitted)}  # offset -> the token emitted there
    top = len(levels)
    preds = [g[-1] for g in r.drafter_update.get("collected", [])]

    def cell_colour(offset: int, token: int, run: bool) -> str:
        if not run:
            return GREY
        if offset in truth:
            return ACCEPTED if truth[offset] == token else REJECTED
        return Q

    xs, ys, texts, colours = [], [], [], []
    for j, row in enumerate(levels):
        for i, token in enumerate(row):
            xs.append(j + i)
            ys.append(j)
            texts.append(label(vocab, token))
            colours.append(P if (j, i) == (0, 0) else cell_colour(j + i, token, i < cols))
    cells = {"type": "scatter", "mode": "markers+text", "x": xs, "y": ys, "text": texts, "name": "window",
             "marker": {"symbol": "square", "size": 26, "color": colours}, "textfont": {"color": INK},
             "hovertemplate": "offset %{x}, level %{y}: %{text}<extra></extra>"}  # fmt: skip
    new = {"type": "scatter", "mode": "markers+text", "x": [top - 1 + c + 1 for c in range(len(preds))],
           "y": [top] * len(preds), "text": [label(vocab, t) for t in preds], "name": "new guesses",
           "marker": {"symbol": "diamond", "size": 26,
                      "color": [cell_colour(top + c, t, True) for c, t in enumerate(preds)]},
           "textfont": {"color": INK},
           "hovertemplate": "offset %{x}: new guess %{text}<extra></extra>"}  # fmt: skip
    layout = {
        "title": {
            "text": f"Jacobi window<br><sub>{len(levels)} levels × {n['W']} columns ({cols} run), and the new guesses</sub>"
        },
        "xaxis": {"title": {"text": "offset after the root (0 = the root)"}, "dtick": 1},
        "yaxis": {"title": {"text": "level (older below)"}, "dtick": 1, "range": [-0.6, top + 0.6]},
        "height": 140 + 45 * (top + 1),
        "margin": {"t": 80, "b": 40},
        "showlegend": True,
        "font": {"color": MUTED},
    }
    return figure([cells, new], layout)
