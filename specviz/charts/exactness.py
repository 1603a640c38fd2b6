"""The exactness lab's figures: the first characters of N speculative runs against the target's
exact distribution over them (specviz.teaching.exactness.ExactnessResult).

Each expected bar carries a band of ±2 binomial standard deviations, sqrt(P(1 − P)/N): where an
observed frequency should fall about 95% of the time if the runs really follow the target."""

import math

import plotly.graph_objects as go
import torch

from specviz.charts.distributions import P_COLOUR, Q_COLOUR, REST, _layout, label_text
from specviz.charts.figure import bar, figure
from specviz.core.markup import plotly_text
from specviz.teaching.exactness import ExactnessResult, tv


def outcome_rows(expected: torch.Tensor, counts: torch.Tensor, vocab: list[str], top: int = 15,
                 labels: list[str] | None = None) -> list[dict]:  # fmt: skip
    """The ``top`` most likely outcomes under the target, plus any outcome observed more often
    than the least of them (what a biased rule over-produces), most likely first.
    ``expected``: probabilities, ``counts``: observed counts, both (V,) * n_tokens; or, with ``labels`` (one
    per entry), any two vectors of outcomes: a pruned enumeration's cells and its rest."""
    n = int(counts.sum())
    e, c = expected.flatten(), counts.flatten().double() / n
    likely = [i for i in e.argsort(descending=True)[:top].tolist() if e[i] > 0]
    floor = float(e[likely[-1]]) if likely else 0.0
    frequent = [i for i in c.argsort(descending=True)[:top].tolist() if c[i] > floor]
    rows = []
    for i in sorted(set(likely) | set(frequent), key=lambda i: -float(e[i])):
        tokens = torch.unravel_index(torch.tensor(i), expected.shape)
        P = float(e[i])
        text = labels[i] if labels is not None else label_text(vocab, tokens)
        rows.append({"outcome": plotly_text(text), "expected": P, "observed": float(c[i]),
                     "count": int(counts.flatten()[i]), "band": 2 * math.sqrt(max(0.0, P * (1 - P)) / n)})  # fmt: skip
    return rows


def outcome_bars(rows: list[dict], title: str) -> go.Figure:
    """Expected (with its ±2σ band) and observed frequency side by side per outcome."""
    x = [r["outcome"] for r in rows]
    data = [
        bar(x, [r["expected"] for r in rows], "expected (exact target), ±2σ band", marker={"color": P_COLOUR},
            error_y={"type": "data", "array": [r["band"] for r in rows], "color": "#004C77"}),
        bar(x, [r["observed"] for r in rows], "observed (speculative runs)", marker={"color": Q_COLOUR},
            customdata=[r["count"] for r in rows], hovertemplate="%{x}: %{y:.4f} (%{customdata} runs)"),
    ]  # fmt: skip
    layout = {**_layout(title, []), "barmode": "group", "height": 340, "yaxis": {"title": {"text": "frequency"}}}
    return figure(data, layout)


def sequence_chart(res: ExactnessResult, vocab: list[str], top: int = 15) -> go.Figure:
    if res.cells is not None:  # a real model: all K + 1 tokens, the pruned cells and the rest
        labels = [label_text(vocab, cell) for cell in res.cells] + [REST]
        title = (f"All {res.new_tokens} tokens: the likeliest sequences and the rest, expected vs observed "
                 f"({res.samples:,} runs)")  # fmt: skip
        return outcome_bars(outcome_rows(res.expected, res.observed, vocab, top, labels), title)
    title = f"The first {res.expected.dim()} characters: the likeliest outcomes, expected vs observed ({res.samples:,} runs)"
    return outcome_bars(outcome_rows(res.expected, res.observed, vocab, top), title)


def first_char_chart(res: ExactnessResult, vocab: list[str], top: int = 15) -> go.Figure:
    """The marginal of the first character: fewer outcomes, so a bias shows with fewer runs."""
    rest = tuple(range(1, res.expected.dim()))
    e = res.expected.sum(rest) if rest else res.expected
    c = res.observed.sum(rest) if rest else res.observed
    return outcome_bars(outcome_rows(e, c, vocab, top), "The first character alone: expected vs observed")


def reference_tv(expected: torch.Tensor, samples: int, draws: int = 5, seed: int = 0) -> float:
    """The TV distance a sample of this size drawn straight from the exact distribution has, on
    average over a few draws: the yardstick for the measured TV, which is never 0 for finite N."""
    gen = torch.Generator().manual_seed(seed)
    e = expected.flatten()
    total = 0.0
    for _ in range(draws):
        counts = torch.bincount(torch.multinomial(e, samples, replacement=True, generator=gen), minlength=len(e))
        total += tv(counts.double() / samples, e)
    return total / draws


def position_chart(res: ExactnessResult) -> go.Figure:
    """Per output position, the histogram of the transformed values u (uniform under exactness)
    as a heat strip: one row per position, one column per bin, colour = observed / expected."""
    counts = res.pit_counts.double()
    expected = counts.sum(1, keepdim=True) / counts.size(1)
    ratio = (counts / expected.clamp_min(1e-12)).tolist()
    B = counts.size(1)
    names = [f"{j} · p {t.p_value:.2g}" if t.p_value is not None else f"{j} (pooled)" for j, t in
             enumerate(res.positions, 1)]  # fmt: skip
    data = [{"type": "heatmap", "z": ratio, "x": [f"{i / B:.2f}–{(i + 1) / B:.2f}" for i in range(B)], "y": names,
             "zmin": 0, "zmax": 2, "colorscale": "RdBu", "reversescale": True,
             "colorbar": {"title": {"text": "observed / expected"}},
             "hovertemplate": "position %{y}, u in %{x}: %{z:.2f} × expected<extra></extra>"}]  # fmt: skip
    title = (f"Every position: u = F(x) + v·p(x)<br><sub>uniform at each output position if exact; draft positions "
             f"1–{res.draft_depths} of K = {res.k}</sub>")  # fmt: skip  # short lines: ~560 px wide at 1024 px
    layout = {"title": {"text": title}, "height": 170 + 22 * len(names), "margin": {"l": 110, "r": 10, "t": 70, "b": 40},
              "xaxis": {"title": {"text": "u bin"}}, "yaxis": {"title": {"text": "position"}, "autorange": "reversed"}}  # fmt: skip
    return figure(data, layout)
