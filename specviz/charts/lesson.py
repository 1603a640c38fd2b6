"""The guided lesson's extra views of a round: the draft alone, what the verification pass reads
and what each of its outputs judges, and a candidate's p-vs-q chart with the verdict hidden (for
"predict, then reveal"). Everything else the lesson draws is the step-through page's charts."""

import pandas as pd
import plotly.graph_objects as go

from specviz.charts.distributions import label, pq_bars
from specviz.core.record import PositionRecord, RoundRecord


def draft_frame(r: RoundRecord, vocab: list[str]) -> pd.DataFrame:
    """The drafted characters in order, with no verdict."""
    return pd.DataFrame({"draft": range(1, len(r.draft_tokens) + 1), "character": [label(vocab, t) for t in r.draft_tokens],
                         "parent": ["root" if p < 0 else f"draft {p + 1}" for p in r.draft_parents]})  # fmt: skip


# verify_frame's columns on the step page's phase view, where it sits beside the text in ~300 px at
# 1024 px (ui/round_view.table: header, width in px); the help spells the short headers out.
VERIFY_VIEW = {"input": {"width": 64}, "character": {"label": "x", "width": 28},
               "position id": {"label": "pos", "width": 40}, "its p judges": {"width": 160}}  # fmt: skip
VERIFY_HELP = {
    "input": "What goes into the pass at this position: the root (the last character kept), or a draft.",
    "character": "x, the character that goes in.",
    "position id": "Its position id: where it sits in the text, which the model's position embedding reads.",
    "its p judges": "The drafts that the target's distribution p after this input accepts or rejects: its "
    "children. After the last draft of a path, p gives the bonus if every draft on it is accepted.",
}


def verify_frame(r: RoundRecord, root: int, vocab: list[str]) -> pd.DataFrame:
    """One row per position of the verification pass: what goes in, at which position id, and which
    drafts the target's distribution there judges (the children of that input)."""
    rows = []
    for node, token, pos in zip(
        [-1, *range(len(r.draft_tokens))], [root, *r.draft_tokens], r.draft_positions, strict=True
    ):
        kids = [i for i, parent in enumerate(r.draft_parents) if parent == node]
        judges = (
            ", ".join(f"draft {i + 1} ({label(vocab, r.draft_tokens[i])})" for i in kids) or "bonus, if all accepted"
        )
        rows.append({"input": "root" if node < 0 else f"draft {node + 1}", "character": label(vocab, token),
                     "position id": pos, "its p judges": judges})  # fmt: skip
    return pd.DataFrame(rows)


def question_bars(pos: PositionRecord, vocab: list[str]) -> go.Figure:
    """pq_bars with the verdict and the uniform draw taken out: what a student sees before guessing."""
    fig = pq_bars(pos, vocab)
    fig.update_annotations(text="candidate: accepted or rejected?")
    fig.update_layout(title={"text": f"Depth {pos.depth}: candidate {label(vocab, pos.token)!r}  p/q={pos.ratio:.3f}"
                             f"<br><sub>accepted with probability min(1, p/q) = {pos.accept_prob:.3f}</sub>"})  # fmt: skip
    return fig
