"""Several children of one node, tried in turn: the heart of multi-draft verification.

At a node, token-wise verification tries the first child x_1 against the target's p; on a
rejection it goes on with the residual norm(max(p - q, 0)) and tries the next child against
that, and so on. The q each child is tried against depends on how the siblings were drawn
(the round's ``Draft.sampling``, see specviz/verifiers/multidraft.py): the same q for draws
with replacement, q with the earlier tokens removed for draws without, one-hot for a
deterministic tree. The record already holds, per try, the q and the p it used, so the table
is read off the record and the residual after each try is recomputed from them.
"""

import pandas as pd

from specviz.charts.distributions import label
from specviz.core.record import RoundRecord
from specviz.verifiers.tokenwise import residual

COLUMNS = ["try", "node", "token", "q(x)", "p(x)", "min(1, p/q)", "u", "result", "residual left"]
HELP = {
    "try": "The order in which the node's children were tried.",
    "node": "The child's index in the draft (two children may share a token: each is its own node).",
    "q(x)": "What the drafter's q gave the child, as the verifier reads it for this sampling scheme.",
    "p(x)": "The target's probability of the child: after a rejected sibling, the residual's.",
    "min(1, p/q)": "Probability of accepting this child.",
    "u": "The uniform draw: accept when u < min(1, p/q). None at temperature 0.",
    "token": "x, the child's drafted character.",
    "result": "✔ accepted, ✘ rejected (the next child, or the correction, is then tried against the residual).",
    "residual left": "After a rejection, what the next child (or the correction) is tried against: "
    "norm(max(p − q, 0)), its three likeliest tokens.",
}

# Short headers and widths (pixels): the table fits the page's ~670 px at 1024 px.
VIEW = {"try": {"width": 40}, "node": {"width": 52}, "token": {"label": "x", "width": 28}, "q(x)": {"width": 52},
        "p(x)": {"width": 52}, "min(1, p/q)": {"width": 96}, "u": {"width": 52},
        "result": {"width": 60, "marks": {"accepted": "✔", "rejected": "✘"}}, "residual left": {"width": 200}}  # fmt: skip


def parent_of(r: RoundRecord, node: int) -> int:
    return r.draft_parents[node]


def multi_try_nodes(r: RoundRecord) -> list[int]:
    """Parents (-1 = the root) at which more than one child was tried this round, in draft order.
    Empty for traversal verification: its tries are whole paths, shown by its own panel."""
    if r.verify_notes.get("rule", "").startswith("traversal"):
        return []
    count: dict[int, int] = {}
    for p in r.positions:
        count[parent_of(r, p.node)] = count.get(parent_of(r, p.node), 0) + 1
    return [n for n, c in count.items() if c > 1]


def node_name(r: RoundRecord, vocab: list[str], node: int) -> str:
    """A parent as a plain-text option label (no markup is parsed where it is shown)."""
    return "the root" if node == -1 else f"node {node} '{label(vocab, r.draft_tokens[node])}'"


def _top(dist, vocab: list[str], n: int = 3) -> str:
    ids = sorted(range(len(dist)), key=lambda t: -dist[t])[:n]
    return ", ".join(f"{label(vocab, t)} {dist[t]:.2f}" for t in ids if dist[t] > 0)


def tries_frame(r: RoundRecord, vocab: list[str], node: int) -> pd.DataFrame:
    """One row per child of ``node`` tried this round, in the order tried (a dataframe shows
    the tokens as text: no markup)."""
    rows = []
    tries = [p for p in r.positions if parent_of(r, p.node) == node]
    for i, p in enumerate(tries, 1):
        left = "" if p.accepted else _top(residual(p.p, p.q).tolist(), vocab)
        rows.append({"try": i, "node": p.node, "token": label(vocab, p.token), "q(x)": p.q_x, "p(x)": p.p_x,
                     "min(1, p/q)": p.accept_prob, "u": p.u, "result": "accepted" if p.accepted else "rejected",
                     "residual left": left})  # fmt: skip
    return pd.DataFrame(rows, columns=COLUMNS)


def tries_sentence(r: RoundRecord, vocab: list[str], node: int, sampling: str | None) -> str:
    """What happened at ``node``, for a caption (plain words; escape before markdown)."""
    tries = [p for p in r.positions if parent_of(r, p.node) == node]
    won = next((p for p in tries if p.accepted), None)
    how = {
        "with-replacement": "drawn with replacement, so every child is tried against the same q",
        "without-replacement": "drawn without replacement, so each child's q is q with the earlier children's "
        "tokens removed",
    }.get(sampling, "chosen deterministically, so q is one-hot on each child")
    end = (f"try {tries.index(won) + 1} was accepted" if won is not None
           else "every child was rejected, so the correction is drawn from the last residual")  # fmt: skip
    return f"{len(tries)} children of {node_name(r, vocab, node)} tried in turn ({how}); {end}."
