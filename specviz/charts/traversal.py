"""A traversal-verified round (specviz/verifiers/traversal.py), from its notes: every node tried,
leaves first, with the sequence ratio it entered with, the acceptance probability alpha it was
tried with (after its own children's rejections), the uniform draw, and where the traversal went
next; and this draft's expected accepted tokens under token-wise and traversal verification.
"""

import pandas as pd
import plotly.graph_objects as go

from specviz.charts.distributions import label
from specviz.charts.figure import draws, probability_figure
from specviz.charts.palette import ACCEPTED, GREY, REJECTED, P
from specviz.core.markup import plotly_text
from specviz.core.record import RoundRecord

RULES = ("traversal", "traversal-token-residual")  # the verifiers whose notes these charts read
COLUMNS = ["try", "node", "path", "depth", "sequence ratio", "α", "u", "result", "next"]
HELP = {
    "try": "The order of the tries: post-order, the deepest leftmost leaf first, a node after its subtree.",
    "node": "The draft node tried (its index in the depth-first flattening); the root is the last context character.",
    "path": "The characters from the root to this node: the sequence it stands for.",
    "depth": "How many drafted characters the path holds.",
    "sequence ratio": "α(parent) · p(x) / q(x) when the node was entered: the path's p/q, each factor capped at 1 "
    "as it goes.",
    "α": "The probability of accepting the whole path when tried: the capped ratio, lowered by every rejected "
    "child (α ← m / (m + 1 − α), m = Σ max(α p − q, 0)).",
    "u": "The uniform draw: accept when u < α. None when α is 0 or 1 (nothing to draw; always at temperature 0).",
    "result": "Accepted (the round keeps this path) or rejected (its parent absorbs the rejection).",
    "next": "Where the traversal went: the next node tried (the next sibling's deepest leaf, or the parent), or "
    "emit: keep the path and draw the last character.",
}
EXPLAIN = (
    "Traversal verification (Weng et al. 2025) tries whole paths, deepest first: a path whose ratio falls below 1 "
    "at one character can make up for it further down, where token-wise verification would have stopped. It is "
    "lossless; on a chain it is block verification, which keeps the most on average, and for one draft it can "
    "keep fewer than token-wise."
)


def is_traversal(r: RoundRecord) -> bool:
    return r.verify_notes.get("rule") in RULES


def _path(r: RoundRecord, node: int) -> list[int]:
    out = []
    while node >= 0:
        out.append(r.draft_tokens[node])
        node = r.draft_parents[node]
    return out[::-1]


def _node(node) -> str:
    return "root" if node == -1 else str(node)


def traversal_frame(r: RoundRecord, vocab: list[str]) -> pd.DataFrame:
    """One row per try of a traversal-verified round, in the order they were made."""
    rows = [{"try": i + 1, "node": _node(t["node"]), "path": "".join(label(vocab, x) for x in _path(r, t["node"])),
             "depth": t["depth"], "sequence ratio": t["ratio"], "α": t["alpha"], "u": t["u"],
             "result": "accepted" if t["accepted"] else "rejected", "next": _node(t["next"])}
            for i, t in enumerate(r.verify_notes["tries"])]  # fmt: skip
    return pd.DataFrame(rows, columns=COLUMNS)


# The checks table beside the text (~300 px at 1024 px): what decided each node, α against u. The
# path's ratios are the traversal panel's table, at full width.
CHECK_COLUMNS = ["depth", "token", "q(x)", "p(x)", "α", "u", "result"]
CHECK_HELP = {
    "depth": "d, the depth: position in the draft; 1 is the first drafted character.",
    "token": "x, the drafted character.",
    "q(x)": "The drafter's probability of the candidate (1 for a fixed guess).",
    "p(x)": "The parent's row when the node was entered: the target's, or what rejected siblings left.",
    "α": "The probability of accepting the whole path to this node when it was tried.",
    "u": "The uniform draw: accept when u < α. None when there was nothing to draw.",
    "result": "Accepted, or rejected; tried in traversal order, leaves first. The accepted node's ancestors come "
    "last, kept with it (no draw of their own; α is their capped sequence ratio).",
}


def checks_frame(r: RoundRecord, vocab: list[str]) -> pd.DataFrame:
    """The drafted nodes tried, in traversal order, with α (not min(1, p/q)) as the acceptance probability."""
    return pd.DataFrame([{"depth": p.depth, "token": label(vocab, p.token), "q(x)": p.q_x, "p(x)": p.p_x,
                          "α": p.accept_prob, "u": p.u,
                          "result": "accepted" if p.accepted else "rejected"} for p in r.positions],
                        columns=CHECK_COLUMNS)  # fmt: skip


def both_rules(r: RoundRecord) -> dict:
    """This draft's expected accepted tokens under token-wise and this rule, and what it kept."""
    e = r.verify_notes["expected_accepted"]
    return {"lossless": e["lossless"], "traversal": e[r.verify_notes["rule"]], "kept": len(r.accepted_path)}


def summary(r: RoundRecord) -> str:
    """The panel's sentence: this draft's expected kept tokens under both rules, and what was kept (markdown)."""
    both = both_rules(r)
    return (f"**The traversal, leaves first.** Expected kept tokens on this draft: **{both['lossless']:.2f}** "
            f"token-wise, **{both['traversal']:.2f}** with {r.verify_notes['rule']} verification, which kept "
            f"**{both['kept']}** this time.")  # fmt: skip


def traversal_figure(r: RoundRecord, vocab: list[str]) -> go.Figure:
    """Per try, in order: the acceptance probability α (a bar, green where accepted) and the draw u
    (a cross: accepted when it falls under the bar's top)."""
    tries = r.verify_notes["tries"]
    x = [f"{i + 1}: {plotly_text(''.join(label(vocab, t) for t in _path(r, s['node'])) or 'root')}"
         for i, s in enumerate(tries)]  # fmt: skip
    data = [
        {"type": "bar", "x": x, "y": [s["alpha"] for s in tries], "name": "α: P(accept the path)",
         "marker": {"color": [ACCEPTED if s["accepted"] else REJECTED for s in tries],
                    "pattern": {"shape": ["" if s["accepted"] else "/" for s in tries]}}},
        {"type": "scatter", "mode": "lines+markers", "x": x, "y": [min(1.0, s["ratio"]) for s in tries],
         "name": "sequence ratio on entry (capped at 1)", "line": {"color": P, "dash": "dot"}},
        draws(x, [s["u"] for s in tries], "draw u (accepted when u < α)", GREY),
    ]  # fmt: skip
    both = both_rules(r)
    title = (f"The traversal, try by try<br><sub>expected kept on this draft: {both['lossless']:.2f} token-wise, "
             f"{both['traversal']:.2f} traversal; it kept {both['kept']} this time</sub>")  # fmt: skip
    return probability_figure(data, title, "try: path tried")
