"""The target's KV cache: what one round wrote and threw away (the ledger), and its length over
every round (the timeline). Verification writes one entry for the root (the last context token)
and one per drafted token; the trim keeps the root and the accepted path, nothing else."""

import plotly.graph_objects as go

from specviz.record import RoundRecord

CACHED, KEPT, TRIMMED = "#9ca3af", "#10b981", "#ef4444"


def kv_ledger(r: RoundRecord) -> go.Figure:
    written = r.kv_after_verify - r.kv_before  # root + every drafted token
    kept_new = r.kv_after_trim - r.kv_before  # root + accepted path
    dropped = written - kept_new
    stages = ["1. before", "2. verify writes", "3. after trim"]
    fig = go.Figure()
    fig.add_bar(y=stages, x=[r.kv_before] * 3, orientation="h", name="cached context", marker_color=CACHED,
                text=[r.kv_before] * 3, textposition="inside")  # fmt: skip
    fig.add_bar(y=stages[1:], x=[written, kept_new], orientation="h", name="root + draft / kept",
                marker_color=[KEPT, KEPT], text=[f"+{written}", f"+{kept_new} kept"], textposition="inside")  # fmt: skip
    how = "gathered along the accepted path" if r.tree_mask is not None else "trimmed from the end"
    fig.add_bar(y=stages[2:], x=[dropped], orientation="h", name=f"dropped ({how})", marker_color=TRIMMED,
                marker_pattern_shape="/", opacity=0.6, text=[f"−{dropped}"], textposition="inside")  # fmt: skip
    note = " — context window moved: cache re-prefilled" if r.reprefill else ""
    fig.update_layout(barmode="stack", height=260, margin=dict(l=10, r=10, t=40, b=10), xaxis_title="cache entries",
                      title=f"KV cache, round {r.index}: {r.kv_before} → {r.kv_after_verify} → {r.kv_after_trim}{note}",
                      legend=dict(orientation="h", y=-0.45), yaxis=dict(autorange="reversed"))  # fmt: skip
    return fig


def kv_timeline(rounds: list[RoundRecord], current: int | None = None) -> go.Figure:
    """Cache length per round: kept before, kept new, dropped; re-prefills marked with a star."""
    x = [r.index for r in rounds]
    fig = go.Figure()
    fig.add_bar(x=x, y=[r.kv_before for r in rounds], name="cached before", marker_color=CACHED)
    fig.add_bar(x=x, y=[r.kv_after_trim - r.kv_before for r in rounds], name="kept", marker_color=KEPT)
    fig.add_bar(x=x, y=[r.kv_after_verify - r.kv_after_trim for r in rounds], name="dropped",
                marker_color=TRIMMED, marker_pattern_shape="/", opacity=0.6)  # fmt: skip
    re = [r for r in rounds if r.reprefill]
    fig.add_scatter(x=[r.index for r in re], y=[r.kv_after_verify + 4 for r in re], mode="markers",
                    marker=dict(symbol="star", size=12, color="#7c3aed"), name="window moved: re-prefill")  # fmt: skip
    if current is not None:
        fig.add_vline(x=current, line_dash="dot", line_color="#111827")
    fig.update_layout(barmode="stack", height=260, margin=dict(l=40, r=10, t=40, b=30), xaxis_title="round",
                      yaxis_title="cache entries", title="KV cache over the rounds", bargap=0.1,
                      legend=dict(orientation="h", y=-0.3))  # fmt: skip
    return fig
