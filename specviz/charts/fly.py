"""FLy's round (specviz/verifiers/fly.py): per drafted position, the target's entropy against the
gate theta, and what the rule did there: matched by the usual test, rejected but deferred and kept
(the window matched), or rejected. Pure: reads the round record and the verifier's notes."""

import plotly.graph_objects as go

from specviz.charts.distributions import label
from specviz.charts.figure import bar, figure
from specviz.charts.palette import ACCEPTED, GREY, ORANGE, REJECTED
from specviz.core.markup import plotly_text
from specviz.core.record import RoundRecord

OUTCOMES = {"matched": ACCEPTED, "kept (deferred)": ORANGE, "rejected": REJECTED}
PATTERNS = {"matched": "", "kept (deferred)": "/", "rejected": "x"}  # colour is never the only cue


def outcomes(r: RoundRecord) -> list[str]:
    """Per checked position: "matched", "kept (deferred)" or "rejected"."""
    deferred = set(r.verify_notes.get("deferred", ()))
    return ["kept (deferred)" if c.node in deferred else "matched" if c.accepted else "rejected" for c in r.positions]


def fly_figure(r: RoundRecord, vocab: list[str]) -> go.Figure:
    notes = r.verify_notes
    kinds = outcomes(r)
    names = [f"{c.depth}: {plotly_text(label(vocab, c.token))}" for c in r.positions]
    entropy = notes["entropy"][: len(r.positions)]
    data = []
    for kind, colour in OUTCOMES.items():
        idx = [i for i, k in enumerate(kinds) if k == kind]
        if idx:
            data.append(bar([names[i] for i in idx], [entropy[i] for i in idx], kind,
                            marker={"color": colour, "pattern": {"shape": PATTERNS[kind]}}))  # fmt: skip
    theta = notes["theta"]
    title = (f"FLy: the target's entropy at each drafted position (gate θ = {theta:g} nats, window W = "
             f"{notes['window']})<br><sub>Above θ a rejection is deferred; kept if the next W - 1 drafted "
             "characters all pass.</sub>")  # fmt: skip
    return figure(data, {
        "title": {"text": title}, "barmode": "overlay", "margin": {"l": 10, "r": 10, "t": 90, "b": 10},
        "xaxis": {"title": {"text": "depth: drafted character"}, "categoryorder": "array", "categoryarray": names},
        "yaxis": {"title": {"text": "H(p), nats"}, "rangemode": "tozero"},
        "shapes": [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": theta, "y1": theta,
                    "line": {"color": GREY, "dash": "dash"}}],
        "legend": {"orientation": "h"},
    })  # fmt: skip
