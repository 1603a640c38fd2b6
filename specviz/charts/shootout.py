"""The shoot-out's figures, from specviz.bench.runner rows (the JSON-lines format `python -m specviz
bench --json` prints), the acceptance-by-position rows of specviz.bench.shootout, and its rows of tau
under token-wise and block (chains) or traversal (trees) verification."""

import pandas as pd
import plotly.graph_objects as go

from specviz.bench.shootout import modelled_speedup
from specviz.charts.figure import PARITY_LINE, bar, figure, sideways, times_labels
from specviz.charts.palette import BLUE, GREEN, INK, ORANGE, PURPLE, SKY, VERMILLION, YELLOW
from specviz.core.markup import plotly_text
from specviz.teaching.stats import expected_tokens_per_round

COLUMNS = {"drafter": "drafter", "verification": "verification", "temperature": "T", "k": "K", "tokens_per_forward": "tokens / forward",
           "acceptance_rate": "acceptance α", "tokens_per_s": "tokens / s", "seconds": "wall s",
           "speedup": "speedup", "verdict": "vs baseline (sign test)", "fraction_of_ideal": "of ideal", "draft_cost": "draft cost c",
           "same_as_baseline": "greedy = baseline"}  # fmt: skip


def _layout(title: str, x: str, y: str, sub: str | None = None, **kw) -> dict:
    """``title`` and ``sub`` (a smaller second line) are escaped: a drafter's name or a file's reaches them."""
    text = plotly_text(title) + ("" if sub is None else f"<br><sub>{plotly_text(sub)}</sub>")
    return {"title": {"text": text}, "height": 320, "margin": {"l": 50, "r": 10, "t": 60, "b": 40},
            "xaxis": {"title": {"text": x}}, "yaxis": {"title": {"text": y}},
            "legend": {"orientation": "h", "y": -0.25}, **kw}  # fmt: skip


# The results, as two tables that each fit the page at 1024 px (~560 px) without scrolling sideways:
# how fast each run was (SPEED), and where its time went (COST). The drafter's name carries its rule
# when that is not the lossless one. Short headers, each spelt out in RESULTS_HELP; widths in pixels.
SPEED = ["drafter", "temperature", "k", "tokens_per_forward", "acceptance_rate", "tokens_per_s", "speedup", "verdict"]
COST = ["drafter", "k", "seconds", "fraction_of_ideal", "draft_cost", "same_as_baseline"]
RESULTS_VIEW = {"drafter": {"width": 140}, "T": {"width": 40, "format": "%.1f"}, "K": {"width": 32},
                "tokens / forward": {"label": "τ", "width": 48, "format": "%.2f"},
                "acceptance α": {"label": "α", "width": 48, "format": "%.2f"},
                "tokens / s": {"label": "tok/s", "width": 60, "format": "%.0f"},
                "wall s": {"label": "s", "width": 56}, "speedup": {"label": "×", "width": 48, "format": "%.2f"},
                "vs baseline (sign test)": {"label": "sign test", "width": 84},
                "of ideal": {"width": 64, "format": "%.2f"}, "draft cost c": {"label": "c", "width": 48, "format": "%.2f"},
                "greedy = baseline": {"label": "= plain", "width": 64}}  # fmt: skip
# The short headers in words, under the tables (a projector's audience sees no tooltips)
RESULTS_LEGEND = ("T: temperature. K: draft length. τ: tokens per target forward pass. α: acceptance rate, accepted "
                  "/ drafted tokens checked. tok/s: tokens per second. ×: speedup over plain decoding. sign test: "
                  "faster, slower or a tie over the repeats. s: wall-clock seconds. of ideal: the speedup over τ. c: "
                  "draft cost, one drafted token's time in target forward passes. = plain: at T = 0, the same text "
                  "as plain decoding.")  # fmt: skip
RESULTS_HELP = {
    "drafter": "The drafter, and its verification rule in brackets when it is not the lossless one.",
    "T": "Temperature.", "K": "Draft length.",
    "tokens / forward": "τ: tokens per target forward pass.", "acceptance α": "α: accepted / drafted tokens checked.",
    "tokens / s": "Tokens per second.", "wall s": "Wall-clock seconds of the run.",
    "speedup": "Speedup: plain decoding's time over this run's.",
    "vs baseline (sign test)": "Faster or slower than plain decoding, by a sign test over the repeats (tie: "
    "no difference the repeats can tell).",
    "of ideal": "The speedup as a fraction of τ, the speedup if drafting and verifying were free.",
    "draft cost c": "c: the time to draft one token, in target forward passes.",
    "greedy = baseline": "At T = 0: whether the text equals plain decoding's.",
}  # fmt: skip


def rules_view(rule: str) -> dict[str, dict]:
    """The rules table's short headers; rules_help spells each out."""
    return {c: {"label": short} for c, short in zip(list(rule_columns(rule).values())[1:],
            ["τ tw", f"τ {rule}", "τ tw, same", f"τ {rule}, same"], strict=True)}  # fmt: skip


def rules_help(rule: str) -> dict[str, str]:
    names = list(rule_columns(rule).values())[1:]
    return {n: f"{n}: tokens per target forward pass (tw: token-wise)." for n in names}


def rule_columns(rule: str) -> dict[str, str]:
    """A rules row's keys (specviz.bench.shootout.rules_row) -> column names, token-wise beside ``rule``."""
    return {"drafter": "drafter", "tau_lossless": "τ token-wise (measured)", f"tau_{rule}": f"τ {rule} (measured)",
            "tau_same_lossless": "τ token-wise (same drafts)", f"tau_same_{rule}": f"τ {rule} (same drafts)"}  # fmt: skip


RULE_COLUMNS = rule_columns("block")
RULES_EXPLAIN = (
    "τ = tokens per target forward pass. Measured: one run with each rule; the runs draft different text, so "
    "they differ by chance too. Same drafts: the block-verified run's own drafts, each scored under both rules "
    "(1 + the mean expected accepted tokens per round): block verification is never below token-wise on average, "
    "though for one draft it can be."
)
TREE_RULES_EXPLAIN = (
    "τ = tokens per target forward pass. Measured: one run with each rule (different drafts and draws). Same "
    "drafts: the traversal-verified run's own trees, each scored under both rules (1 + the mean expected accepted "
    "tokens per round). Traversal verification tries whole paths, leaves first; on a chain it is block "
    "verification, on a tree it is not guaranteed to beat token-wise on every draft."
)


def name(row: dict) -> str:
    """A row's label: the drafter, and the verification rule when it is not the lossless one."""
    rule = row.get("verification", "lossless")
    return plotly_text(row["drafter"] if rule == "lossless" else f"{row['drafter']} ({rule})")


def results_frame(rows: list[dict], keys: list[str] | None = None) -> pd.DataFrame:
    """The rows under COLUMNS' headers: the ``keys`` asked for (SPEED, COST; default every column)."""
    keys = keys or list(COLUMNS)
    out = []
    for r in rows:
        rule = r.get("verification") or "lossless"
        row = {COLUMNS[c]: r.get(c, "lossless" if c == "verification" else None) for c in keys}
        if "verification" not in keys and rule != "lossless":
            row["drafter"] = f"{r['drafter']} ({rule})"
        out.append(row)
    return pd.DataFrame(out, columns=[COLUMNS[c] for c in keys])


def rules_frame(rules: list[dict], rule: str = "block") -> pd.DataFrame:
    columns = rule_columns(rule)
    return pd.DataFrame([{columns[c]: r[c] for c in columns} for r in rules], columns=list(columns.values()))


def rules_bars(rules: list[dict], k: int, rule: str = "block") -> go.Figure:
    """Per drafter: tau token-wise and under ``rule``, measured and on the same drafts."""
    names = [plotly_text(r["drafter"]) for r in rules]
    columns = rule_columns(rule)
    colours = {"tau_lossless": "#F0E442", "tau_same_lossless": "#E69F00", f"tau_{rule}": "#56B4E9",
               f"tau_same_{rule}": "#004C77"}  # fmt: skip
    data = [bar(names, [r[c] for r in rules], columns[c], marker={"color": colours[c]},
                hovertemplate="%{x}: %{y:.2f}") for c in colours]  # fmt: skip
    return figure(*sideways(data, _layout(f"τ, token-wise and {rule} verification", "drafter",
                                          "tokens per target forward", f"K={k}", barmode="group")))  # fmt: skip


def speedup_bars(rows: list[dict], title: str, sub: str | None = None) -> go.Figure:
    """Speedup (measured) next to tokens per forward pass (the ideal speedup) per drafter."""
    names = [name(r) for r in rows]
    data = [
        bar(names, [r["tokens_per_forward"] for r in rows], "tokens / forward (ideal)", marker={"color": "#56B4E9"}),
        bar(names, [r["speedup"] for r in rows], "speedup (measured)", marker={"color": "#004C77"},
            **times_labels(r["speedup"] for r in rows)),
    ]  # fmt: skip
    return figure(*sideways(data, _layout(title, "drafter", "× baseline", sub, barmode="group", shapes=[PARITY_LINE])))


# A line per drafter: 8 Okabe-Ito colours x 3 dashes x 6 markers, so no two of the 17 look alike
COLOURS = (BLUE, ORANGE, GREEN, VERMILLION, SKY, PURPLE, YELLOW, INK)
DASHES = ("solid", "dash", "dot")
MARKERS = ("circle", "square", "diamond", "triangle-up", "x", "star")


def styled(lines: list[dict]) -> list[dict]:
    """Each line its own colour, dash and marker (colour alone named 16 series with a few colours)."""
    return [{**d, "line": {"color": COLOURS[i % 8], "dash": DASHES[i // 8 % 3]},
             "marker": {"symbol": MARKERS[i % 6], "size": 8}} for i, d in enumerate(lines)]  # fmt: skip


# A line per drafter (17 of them): the page draws these full width, and their legend below the axis title
# may be as tall as it needs (plotly's default makes a long one a small scrolling box over the axis title).
LINES = {"height": 520, "legend": {"orientation": "h", "maxheight": 1}}


def k_sweep(rows: list[dict]) -> go.Figure:
    """Speedup against K, a line per drafter: where each one peaks."""
    data = []
    for d in dict.fromkeys(name(r) for r in rows if r["drafter"] != "none"):
        mine = sorted((r for r in rows if name(r) == d), key=lambda r: r["k"])
        data.append({"type": "scatter", "mode": "lines+markers", "name": d, "x": [r["k"] for r in mine],
                     "y": [r["speedup"] for r in mine]})  # fmt: skip
    return figure(styled(data), _layout("Speedup against K", "K (draft length)", "speedup × baseline",
                                xaxis={"title": {"text": "K (draft length)"}, "type": "log", "dtick": 0.30103},
                                **LINES))  # fmt: skip


def position_lines(by_position: dict[str, list[dict]]) -> go.Figure:
    data = [{"type": "scatter", "mode": "lines+markers", "name": plotly_text(d), "x": [p["depth"] for p in rows],
             "y": [p["rate"] for p in rows], "customdata": [[p["accepted"], p["tried"]] for p in rows],
             "hovertemplate": "depth %{x}: %{customdata[0]}/%{customdata[1]} accepted"}
            for d, rows in by_position.items()]  # fmt: skip
    return figure(styled(data), _layout("Acceptance rate by draft position", "draft position (depth)", "accepted / tried",
                                yaxis={"title": {"text": "accepted / tried"}, "range": [0, 1.05]},
                                xaxis={"title": {"text": "draft position (depth)"}, "dtick": 1}, **LINES))  # fmt: skip


def expected_vs_measured(rows: list[dict]) -> go.Figure:
    """Measured tokens per round against (1 - a^(K+1)) / (1 - a) from the measured a."""
    rows = [r for r in rows if r["acceptance_rate"] is not None]
    names = [name(r) for r in rows]
    data = [
        bar(names, [r["tokens_per_forward"] for r in rows], "measured tokens / round", marker={"color": "#009E73"}),
        bar(names, [expected_tokens_per_round(r["acceptance_rate"], r["k"]) for r in rows],
            "expected (1 − α^(K+1)) / (1 − α)", marker={"color": "#C7EBDF"}),
    ]  # fmt: skip
    return figure(*sideways(data, _layout("Tokens per round", "drafter", "tokens", sub="measured, and expected from α",
                                          barmode="group")))  # fmt: skip


def model_vs_measured(rows: list[dict]) -> go.Figure:
    """Measured speedup against the model E / (K c + v) with the measured costs."""
    rows = [r for r in rows if modelled_speedup(r) is not None]
    names = [name(r) for r in rows]
    data = [
        bar(names, [r["speedup"] for r in rows], "measured speedup", marker={"color": "#004C77"}),
        bar(names, [modelled_speedup(r) for r in rows], "model E / (K·c + v)", marker={"color": "#CC79A7"},
            customdata=[[r["draft_cost"], r["verify_cost"]] for r in rows],
            hovertemplate="%{x}: %{y:.2f}× with c=%{customdata[0]:.3f}, v=%{customdata[1]:.2f}"),
    ]  # fmt: skip
    return figure(*sideways(data, _layout("Speedup: measured and modelled", "drafter", "× baseline", barmode="group")))
