"""The verification of one round, position by position: what was drafted (q), what the target
wanted (p), the overlap min(p, q) that is accepted, and what is drawn when it is not.

A distribution comes as a whole row (a tensor) or, for a wide vocabulary, as the record's top entries and
the rest (record.TopRest); the charts take either. Over word pieces (a BPE vocabulary) a bar for "the rest"
shows the mass of every token not drawn, so the bars shown plus the rest sum to 1."""

import pandas as pd
import plotly.graph_objects as go
import torch

from specviz.charts.figure import arrow, bar, figure
from specviz.charts.palette import GREY
from specviz.core.record import PositionRecord, RoundRecord, TopRest, word_pieces, worded

P_COLOUR, Q_COLOUR, MIN_COLOUR, DRAW_COLOUR = "#0072B2", "#E69F00", "rgba(0,158,115,0.35)", "#D55E00"
CANDIDATE_COLUMNS = ["depth", "token", "q(x)", "p(x)", "p/q", "u", "result"]
VISIBLE = str.maketrans({"\n": "\u21b5", " ": "\u2423"})  # newline and space as glyphs one can see
REST = "the rest"  # the category of the bar for every token not shown
REST_COLOUR = GREY  # the mass of every token not shown


def label(vocab: list[str], token: int) -> str:
    """A token as a readable label (an axis category, a table cell): its piece of text, vocab[token]
    (one character or several, as the tokenizer made it), with newlines and spaces made visible."""
    return vocab[token].translate(VISIBLE)


def label_text(vocab: list[str], tokens) -> str:
    """Tokens as one readable string, each piece as ``label`` shows it."""
    return "".join(label(vocab, int(t)) for t in tokens)


def entries(dist: torch.Tensor | TopRest) -> dict[int, float]:
    """A distribution's recorded probabilities by id: every id of a whole row, the kept ones of a TopRest."""
    if isinstance(dist, TopRest):
        return dict(zip(dist.ids, dist.probs, strict=True))
    return dict(enumerate(dist.tolist()))


def _top(vectors: list[dict[int, float]], must: list[int], top: int) -> list[int]:
    """Token ids to show: the ``must`` ones, then the largest under any of the vectors."""
    best = sorted(vectors[0], key=lambda t: -max(v[t] for v in vectors))
    ids = list(dict.fromkeys([t for t in must if t is not None] + best))[:top]
    return sorted(ids, key=lambda t: -vectors[0][t])


def _rest_shown(dist, vocab: list[str]) -> bool:
    """Whether a chart adds the bar for the rest: on a TopRest, and over word pieces (never the character model's)."""
    return isinstance(dist, TopRest) or word_pieces(vocab)


def rest_mass(values: dict[int, float], ids: list[int]) -> float:
    """What the bar for the rest shows: 1 - the shown probabilities (never below 0 from rounding)."""
    return max(0.0, 1.0 - sum(values[t] for t in ids))


def _layout(title: str, annotations: list[dict]) -> dict:
    return {"title": {"text": title}, "height": 300, "margin": {"l": 40, "r": 10, "t": 60, "b": 30},
            "barmode": "overlay", "legend": {"orientation": "h", "y": -0.15}, "yaxis": {"title": {"text": "probability"}},
            "annotations": annotations}  # fmt: skip


def pq_bars(pos: PositionRecord, vocab: list[str], top: int = 12) -> go.Figure:
    """p and q side by side over the top tokens, min(p, q) shaded over them, the candidate
    marked, and alpha = sum over the WHOLE vocabulary of min(p, q) in the title."""
    p, q = entries(pos.p), entries(pos.q)
    ids = _top([p, q], [pos.token], top)
    x = [label(vocab, t) for t in ids]
    if isinstance(pos.p, TopRest):
        alpha = pos.p.overlap
    else:
        alpha = sum(min(a, b) for a, b in zip(p.values(), q.values(), strict=True))
    py, qy = [p[t] for t in ids], [q[t] for t in ids]
    if _rest_shown(pos.p, vocab):  # the rest: p's and q's mass on every token not shown
        x, py, qy = x + [REST], py + [rest_mass(p, ids)], qy + [rest_mass(q, ids)]
    data = [
        bar(x, py, "p (target)", marker={"color": P_COLOUR}, width=0.4, offset=-0.42),
        bar(x, qy, "q (draft)", marker={"color": Q_COLOUR}, width=0.4, offset=0.02),
        # Drawn last, hatched and see-through: the accepted mass shows across both bars.
        bar(x, [min(p[t], q[t]) for t in ids], "min(p, q)", width=0.9, offset=-0.45,
            marker={"color": MIN_COLOUR, "pattern": {"shape": "x", "fgcolor": "#00664A"},
                    "line": {"color": "#00664A", "width": 1}}),
    ]  # fmt: skip
    verdict = "accepted" if pos.accepted else "rejected"
    u = "" if pos.u is None else f", u={pos.u:.3f}"
    mark = arrow(label(vocab, pos.token), max(p[pos.token], q[pos.token]), f"candidate, {verdict}")
    title = (f"Depth {pos.depth}: candidate {label(vocab, pos.token)!r}  p/q={pos.ratio:.3f}{u}<br>"
             f"<sub>acceptance probability Σ min(p, q) = {alpha:.3f}</sub>")  # fmt: skip
    return figure(data, _layout(title, [mark]))


def _draw_bars(row: torch.Tensor | TopRest, drawn: int, vocab: list[str], name: str, title: str,
               top: int) -> go.Figure:  # fmt: skip
    dist = entries(row)
    ids = _top([dist], [drawn], top)
    colours = [DRAW_COLOUR if t == drawn else P_COLOUR for t in ids]
    x, y = [label(vocab, t) for t in ids], [dist[t] for t in ids]
    if _rest_shown(row, vocab):
        x, y, colours = x + [REST], y + [rest_mass(dist, ids)], colours + [REST_COLOUR]
    data = [bar(x, y, name, marker={"color": colours})]
    return figure(data, _layout(title, [arrow(label(vocab, drawn), dist[drawn], "drawn")]))


def residual_bars(r: RoundRecord, vocab: list[str], top: int = 12) -> go.Figure:
    """After a rejection: norm(max(0, p - q)), and the correction drawn from it."""
    return _draw_bars(r.residual, r.correction, vocab, "norm(max(0, p − q))",
                      f"Residual: correction {label(vocab, r.correction)!r}<br><sub>drawn from norm(max(0, p − q))</sub>",
                      top)  # fmt: skip


def bonus_bars(r: RoundRecord, vocab: list[str], top: int = 12) -> go.Figure:
    """After a fully accepted draft (or none: a plain step): the target's next distribution, and the
    bonus drawn from it. Two short lines: the chart is ~300 px wide beside the text at 1024 px."""
    why = "every drafted character accepted: one more, free" if r.draft_tokens else "nothing drafted: a plain step"
    why = worded(why, vocab)
    return _draw_bars(r.bonus_p, r.bonus, vocab, "p (target)",
                      f"Bonus: {label(vocab, r.bonus)!r}, drawn from p<br><sub>{why}</sub>", top)  # fmt: skip


def candidate_frame(r: RoundRecord, vocab: list[str]) -> pd.DataFrame:
    """One row per drafted token the target checked, in the order it checked them. No min(1, p/q)
    column: it is p/q capped at 1, and u < min(1, p/q) exactly when u < p/q (u < 1); without it the
    table fits beside the text at 1024 px (specviz/charts/verdict.py)."""
    return pd.DataFrame(
        [
            {
                "depth": p.depth,
                "token": label(vocab, p.token),
                "q(x)": p.q_x,
                "p(x)": p.p_x,
                "p/q": p.ratio,
                "u": p.u,
                "result": "accepted" if p.accepted else "rejected",
            }  # fmt: skip
            for p in r.positions
        ],
        columns=CANDIDATE_COLUMNS,
    )
