"""The target's KV cache: what one round wrote and threw away (the ledger), and its length over
every round (the timeline). Verification writes one entry for the root (the last context token)
and one per drafted token; the trim keeps the root and the accepted path, nothing else."""

import plotly.graph_objects as go

from specviz.charts.figure import bar, figure
from specviz.core.record import RoundRecord

CACHED, KEPT, TRIMMED = "#999999", "#009E73", "#D55E00"
HATCH = {"pattern": {"shape": "/"}}


def kv_ledger(r: RoundRecord, stages_shown: int = 3) -> go.Figure:
    """The three stages of the round's cache; ``stages_shown`` < 3 draws the first ones only (the
    phase-by-phase view: nothing is trimmed before the trim phase)."""
    written = r.kv_after_verify - r.kv_before  # root + every drafted token (+ extra tokens: lookahead's window)
    what = f"root + draft + {len(r.extra_tokens)} extra" if r.extra_tokens else "root + draft"
    kept_new = r.kv_after_trim - r.kv_before  # root + accepted path
    dropped = written - kept_new
    stages = ["1. before", "2. verify writes", "3. after trim"]
    how = "gathered along the accepted path" if r.tree_mask is not None else "trimmed from the end"
    h = {"orientation": "h"}
    data = [
        bar([r.kv_before] * 3, stages, "cached context", marker={"color": CACHED}, **h),
        bar([written, kept_new], stages[1:], f"{what} / kept", marker={"color": KEPT}, **h),
        bar([dropped], stages[2:], f"dropped ({how})", marker={"color": TRIMMED, **HATCH}, opacity=0.6, **h),
    ]  # fmt: skip
    # The counts beside each stage's name, level and full size: inside a bar, "+2 kept" in a 2-entry
    # segment was turned on its side and shrunk, or ran into its neighbour's label.
    counts = [f"{r.kv_before}", f"{r.kv_before} + {written}", f"{r.kv_before} + {kept_new} kept, −{dropped}"]
    ticks = [f"{stage}: {n}" for stage, n in zip(stages, counts, strict=True)]
    for trace in data:  # keep the stages reached so far; the axis keeps all three, so nothing jumps
        keep = [i for i, y in enumerate(trace["y"]) if stages.index(y) < stages_shown]
        for field in ("x", "y"):
            trace[field] = [trace[field][i] for i in keep]
    note = " — context window moved: cache re-prefilled" if r.reprefill else ""
    title = f"KV cache, round {r.number}: {r.kv_before} → {r.kv_after_verify} → {r.kv_after_trim}{note}"
    return figure(data, {"barmode": "stack", "height": 260, "margin": {"l": 10, "r": 10, "t": 40, "b": 10},
                         "title": {"text": title}, "xaxis": {"title": {"text": "cache entries"}},
                         "legend": {"orientation": "h", "y": -0.45},
                         "yaxis": {"autorange": "reversed", "categoryorder": "array", "categoryarray": stages,
                                   "tickvals": stages, "ticktext": ticks}})  # fmt: skip


def kv_timeline(rounds: list[RoundRecord], current: int | None = None) -> go.Figure:
    """Cache length per round: kept before, kept new, dropped; re-prefills marked with a star."""
    x = [r.number for r in rounds]
    re = [r for r in rounds if r.reprefill]
    data = [
        bar(x, [r.kv_before for r in rounds], "cached before", marker={"color": CACHED}),
        bar(x, [r.kv_after_trim - r.kv_before for r in rounds], "kept", marker={"color": KEPT}),
        bar(x, [r.kv_after_verify - r.kv_after_trim for r in rounds], "dropped", marker={"color": TRIMMED, **HATCH},
            opacity=0.6),
        {"type": "scatter", "x": [r.number for r in re], "y": [r.kv_after_verify + 4 for r in re], "mode": "markers",
         "marker": {"symbol": "star", "size": 12, "color": "#CC79A7"}, "name": "window moved: re-prefill"},
    ]  # fmt: skip
    shapes = []
    if current is not None:  # a dotted line at the current round
        shapes.append({"type": "line", "x0": current, "x1": current, "y0": 0, "y1": 1, "yref": "paper",
                       "line": {"dash": "dot", "color": "#111827"}})  # fmt: skip
    return figure(data, {"barmode": "stack", "height": 260, "margin": {"l": 40, "r": 10, "t": 40, "b": 30},
                         "xaxis": {"title": {"text": "round"}, "tickformat": "d", "dtick": 1 if len(x) <= 25 else None},
                         "yaxis": {"title": {"text": "cache entries"}},
                         "title": {"text": "KV cache over the rounds"}, "bargap": 0.1, "shapes": shapes,
                         "legend": {"orientation": "h", "y": -0.45}})  # fmt: skip
