"""NASD's adaptive storage, round by round: what each round added (from the accepted tokens and
from the target's top filler_top_k tokens), how the storage grew, and the drafts it produced.

The records hold what each round added, not the storage itself. The live drafter holds the
storage after every computed round, so subtracting everything the rounds added gives the
storage the prompt built, exactly; replaying the rounds from there tells, for each addition,
whether it opened a new context, a new (context, token) entry, or only raised a count.
"""

from collections import Counter

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from specviz.charts.distributions import label, label_text
from specviz.charts.figure import finish
from specviz.charts.tree import node_status
from specviz.core.record import RoundRecord

SOURCES = ("prompt", "accepted", "filler_top_k")
COLOUR = {"prompt": "#999999", "accepted": "#009E73", "filler_top_k": "#CC79A7"}
EFFECTS = ("new context", "new entry", "count + 1")


def storage_growth(final_rows: list[dict], rounds: list[RoundRecord]) -> list[dict]:
    """One state per point in time: the prompt's storage, then after each round. ``final_rows``
    is NASDDrafter.rows() after every round in ``rounds``. Each state counts the storage's
    contexts, its (context, token) entries by the source that created them, and its total count
    by source; each round's state also lists the effect of every addition, in order."""
    counts = {tuple(row["context"]): Counter(dict(map(tuple, row["counts"]))) for row in final_rows}
    for r in rounds:
        for a in r.drafter_update.get("added", []):
            counts.setdefault(tuple(a["context"]), Counter())[a["token"]] -= 1
    counts = {ctx: Counter({t: c for t, c in cs.items() if c}) for ctx, cs in counts.items()}
    counts = {ctx: cs for ctx, cs in counts.items() if cs}
    if any(c < 0 for cs in counts.values() for c in cs.values()):
        raise ValueError("the rounds add more than the storage holds: rows and rounds do not belong together")
    origin = {(ctx, t): "prompt" for ctx, cs in counts.items() for t in cs}
    mass = Counter(prompt=sum(sum(cs.values()) for cs in counts.values()))

    def state(index, effects):
        return {"round": index, "contexts": len(counts), "entries": Counter(origin.values()), "counts": Counter(mass),
                "effects": effects}  # fmt: skip

    states = [state(None, [])]
    for r in rounds:
        effects = []
        for a in r.drafter_update.get("added", []):
            ctx, t = tuple(a["context"]), a["token"]
            cs = counts.setdefault(ctx, Counter())
            effects.append("new context" if not cs else "count + 1" if cs[t] else "new entry")
            if not cs[t]:
                origin[ctx, t] = a["source"]
            cs[t] += 1
            mass[a["source"]] += 1
        states.append(state(r.number, effects))
    return states


def growth_figure(states: list[dict], current: int | None = None) -> go.Figure:
    """Top: what the storage gained since the prompt, (context, token) entries stacked by the
    source that created them, and new contexts; the prompt's share is in the title, since it
    would dwarf the growth. Bottom: the counts each round added, by source, and how many of them
    were new entries."""
    start = states[0]
    top = f"Entries added to the prompt's {start['entries']['prompt']}<br>(in {start['contexts']} contexts)"  # ~300 px wide
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.1, row_heights=[0.5, 0.5],
                        subplot_titles=(top, "Counts added per round"))  # fmt: skip
    x = [0] + [s["round"] for s in states[1:]]  # 0: the prompt
    for src in SOURCES[1:]:
        fig.add_scatter(x=x, y=[s["entries"][src] for s in states], stackgroup="entries", mode="lines",
                        name=f"entries from {src}", line=dict(color=COLOUR[src]), legendgroup=src, row=1, col=1)  # fmt: skip
    fig.add_scatter(x=x, y=[s["contexts"] - start["contexts"] for s in states], mode="lines+markers",
                    name="new contexts", line=dict(color="#111827", dash="dot"), row=1, col=1)  # fmt: skip
    rounds = states[1:]
    for src in SOURCES[1:]:
        added = [s["counts"][src] - p["counts"][src] for p, s in zip(states[:-1], rounds, strict=True)]
        fig.add_bar(x=x[1:], y=added, name=f"added from {src}", marker_color=COLOUR[src], legendgroup=src,
                    showlegend=False, row=2, col=1)  # fmt: skip
    fresh = [sum(e != "count + 1" for e in s["effects"]) for s in rounds]
    fig.add_scatter(x=x[1:], y=fresh, mode="markers", name="of which new entries", row=2, col=1,
                    marker=dict(symbol="diamond", size=9, color="#111827"))  # fmt: skip
    if current is not None:
        fig.add_vline(x=current, line_dash="dot", line_color="#111827")
    fig.update_layout(barmode="stack", height=500, margin=dict(l=40, r=10, t=60, b=30),
                      legend=dict(orientation="h", y=-0.16))  # fmt: skip
    few = len(x) <= 25
    fig.update_xaxes(tickvals=x if few else None, ticktext=["prompt"] + [str(v) for v in x[1:]] if few else None)
    fig.update_xaxes(title="after round", row=2, col=1)
    fig.update_yaxes(title_text="entries", row=1, col=1)
    fig.update_yaxes(title_text="counts", row=2, col=1)
    fig.update_yaxes(rangemode="tozero")  # counts: an empty panel's axis is not -1 to 1
    if not rounds:  # before round 1 the lower panel has nothing to draw: say so
        fig.add_annotation(text="No round yet", xref="x2 domain",
                           yref="y2 domain", x=0.5, y=0.5, showarrow=False)  # fmt: skip
    return finish(fig)


LOOKUPS_HELP = {
    "step": "The lookup's order: one per drafted character.",
    "context": "The last n − 1 characters, looked up in the storage.",
    "known": "Whether the storage holds this context.",
    "draft": "The character the lookup proposed.",
    "how": "Why that character: the context's most frequent continuation, or the filler (the commonest "
    "character) where the context is unknown, or the draft's end.",
    "verification": "What the target's check made of it.",
}
ADDED_HELP = {
    "context": "The n − 1 characters before the counted character.",
    "next token": "The character counted after that context.",
    "source": "Where the count came from: an emitted character, or one of the target's top alternatives.",
    "effect": "What the count changed in the storage.",
}


def added_frame(r: RoundRecord, effects: list[str], vocab: list[str]) -> pd.DataFrame:
    """What the round taught the storage, one row per count added."""
    added = r.drafter_update.get("added", [])
    return pd.DataFrame(
        [
            {
                "context": label_text(vocab, a["context"]),
                "next token": label(vocab, a["token"]),
                "source": a["source"],
                "effect": e,
            }
            for a, e in zip(added, effects, strict=True)
        ],  # fmt: skip
        columns=["context", "next token", "source", "effect"],
    )


def storage_frame(rows: list[dict], vocab: list[str]) -> pd.DataFrame:
    """The storage itself (NASDDrafter.rows()): one row per context, its next tokens with counts."""
    return pd.DataFrame(
        [
            {
                "context": label_text(vocab, row["context"]),
                "next tokens (count)": ", ".join(f"{label(vocab, t)} ({c})" for t, c in row["counts"]),
            }
            for row in rows
        ],  # fmt: skip
        columns=["context", "next tokens (count)"],
    )


def lookups_frame(r: RoundRecord, vocab: list[str]) -> pd.DataFrame:
    """How the round's draft was made: one row per storage lookup, and what verification said."""
    status = node_status(r)
    rows = []
    for i, lk in enumerate(r.draft_notes.get("lookups", [])):
        if lk["token"] is None:
            how, proposed, verdict = "unknown context: stop", "", ""
        else:
            how = "filler (commonest token)" if lk["filler"] else "most frequent continuation"
            proposed, verdict = label(vocab, lk["token"]), status[i]
        rows.append({"step": i + 1, "context": label_text(vocab, lk["context"]), "known": lk["known"], "draft": proposed,
                     "how": how, "verification": verdict})  # fmt: skip
    return pd.DataFrame(rows, columns=["step", "context", "known", "draft", "how", "verification"])


def drafts_figure(rounds: list[RoundRecord], current: int | None = None) -> go.Figure:
    """Per round: drafted tokens from known contexts and from the filler, how many the target
    accepted, and the rounds whose draft stopped at an unknown context."""
    x = [r.number for r in rounds]
    known = [sum(r.draft_notes.get("known", [])) for r in rounds]
    filler = [len(r.draft_tokens) - k for r, k in zip(rounds, known, strict=True)]
    fig = go.Figure()
    fig.add_bar(x=x, y=known, name="drafted from a known context", marker_color="#0072B2")
    fig.add_bar(x=x, y=filler, name="drafted by the filler", marker_color="#E69F00")
    fig.add_scatter(x=x, y=[r.n_accepted for r in rounds], mode="markers", name="accepted",
                    marker=dict(symbol="line-ew-open", size=18, color="#009E73", line=dict(width=3)))  # fmt: skip
    stops = [r for r in rounds if r.draft_notes.get("stopped_unknown")]
    fig.add_scatter(x=[r.number for r in stops], y=[len(r.draft_tokens) + 0.4 for r in stops], mode="markers",
                    name="stopped at an unknown context", marker=dict(symbol="x", size=9, color="#D55E00"))  # fmt: skip
    if current is not None:
        fig.add_vline(x=current, line_dash="dot", line_color="#111827")
    fig.update_layout(barmode="stack", height=300, margin=dict(l=40, r=10, t=40, b=30), xaxis=dict(title="round", dtick=1 if len(x) <= 25 else None),
                      yaxis_title="tokens", title="The drafts the storage produced", legend=dict(orientation="h", y=-0.3))  # fmt: skip
    return finish(fig)


def drafts_frame(rounds: list[RoundRecord], vocab: list[str]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "round": r.number,
                "drafted": label_text(vocab, r.draft_tokens),
                "accepted": r.n_accepted,
                "known lookups": sum(r.draft_notes.get("known", [])),
                "filler used": r.draft_notes.get("filler_used", False),
                "stopped at unknown": r.draft_notes.get("stopped_unknown", False),
                "entries before": r.draft_notes.get("storage", {}).get("entries"),
            }
            for r in rounds
        ],  # fmt: skip
        columns=[
            "round",
            "drafted",
            "accepted",
            "known lookups",
            "filler used",
            "stopped at unknown",
            "entries before",
        ],
    )
