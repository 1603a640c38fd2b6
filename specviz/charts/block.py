"""One drafted chain, verified both ways: token-wise (Leviathan et al. 2023) and block
verification (Sun et al. 2024), from the notes a block-verified round keeps
(specviz/verifiers/block.py: weights w_i, stops h_i, draws eta_i, tau, and the expected accepted
tokens of this very draft under each rule).

Token-wise keeps position i only if every position up to i passes its own min(1, p/q), so the
chance that it keeps i is the product of those up to i, and the expected kept length is their
sum. Block verification carries a weight w_i = min(1, w_{i-1} p/q) along the chain: a later
token with p > q can make up for an earlier one with p < q, and it keeps the longest prefix
whose stop draw passes (eta_i < h_i), tau.
"""

import pandas as pd
import plotly.graph_objects as go

from specviz.charts.distributions import label
from specviz.charts.figure import draws, probability_figure
from specviz.core.markup import plotly_text
from specviz.core.record import RoundRecord

COLUMNS = ["depth", "token", "p(x)", "q(x)", "min(1, p/q)", "P(tw keeps)", "w", "h", "η", "block keeps"]
HELP = {
    "p(x)": "The target's probability of the drafted token at this position.",
    "q(x)": "The drafter's probability of it (1 for a fixed guess).",
    "min(1, p/q)": "Token-wise: the probability of accepting this token once every earlier one was.",
    "P(tw keeps)": "Token-wise: the probability of keeping this position, the product of min(1, p/q) up "
    "to here. These add up to the expected kept length.",
    "w": "Block: w_i = min(1, w_(i-1) p/q), what the prefix up to here still weighs.",
    "h": "Block: the probability that the prefix up to here passes its draw.",
    "η": "Block: the uniform draw for this prefix; it passes when η < h. None at temperature 0.",
    "block keeps": "Block keeps the longest prefix that passed: tau tokens.",
}
SUMS = (
    "Token-wise: Σ over positions of Π min(1, p/q) up to it. Block: Σ_j j·h_j·Π_(l>j)(1 − h_l). Both are "
    "this draft's expectations over the draws; what block verification kept is what its draws gave."
)
EXPLAIN = (
    "Block verification is lossless too, and on average it never keeps fewer tokens than token-wise verification "
    "(Sun et al. 2024 prove it keeps the most of any valid rule). For one draft it can keep fewer: the guarantee "
    "is about the average over drafts."
)


def tokenwise_reach(r: RoundRecord) -> list[float]:
    """Per position, the probability that token-wise verification keeps it: prod of min(1, p/q)."""
    reach, out = 1.0, []
    for p in r.positions:
        reach *= min(1.0, p.ratio)
        out.append(reach)
    return out


def block_frame(r: RoundRecord, vocab: list[str]) -> pd.DataFrame:
    """One row per drafted position of a block-verified round: both rules side by side."""
    n = r.verify_notes
    rows = []
    for i, (p, reach) in enumerate(zip(r.positions, tokenwise_reach(r), strict=True)):
        rows.append({"depth": p.depth, "token": label(vocab, p.token), "p(x)": p.p_x, "q(x)": p.q_x,
                     "min(1, p/q)": min(1.0, p.ratio), "P(tw keeps)": reach, "w": n["weights"][i],
                     "h": n["stops"][i], "η": n["etas"][i], "block keeps": "yes" if i < n["tau"] else "no"})  # fmt: skip
    return pd.DataFrame(rows, columns=COLUMNS)


# The checks table beside the text (~300 px at 1024 px): what decided each position under block
# verification; the full table, both rules side by side (block_frame), is the block panel's, at full width.
CHECK_COLUMNS = ["depth", "token", "q(x)", "p(x)", "h", "η", "result"]
CHECK_HELP = {
    "depth": "d, the depth: the token's position in the draft; 1 is the first drafted character.",
    "token": "x, the drafted character.",
    "q(x)": HELP["q(x)"],
    "p(x)": HELP["p(x)"],
    "h": HELP["h"],
    "η": HELP["η"],
    "result": "✔ kept, ✘ not kept: block verification keeps the longest prefix whose draw passed (η < h); the "
    "block panel below scores the same draft token-wise too.",
}
# The full table's short headers and widths (pixels), for the panel's ~670 px at 1024 px
VIEW = {"depth": {"label": "d", "width": 32}, "token": {"label": "x", "width": 28}, "p(x)": {"width": 52},
        "q(x)": {"width": 52}, "min(1, p/q)": {"width": 96}, "P(tw keeps)": {"width": 96}, "w": {"width": 52},
        "h": {"width": 52}, "η": {"width": 52}, "block keeps": {"width": 96}}  # fmt: skip


def checks_frame(r: RoundRecord, vocab: list[str]) -> pd.DataFrame:
    """One row per drafted position of a block-verified round: what decided it under block verification."""
    n = r.verify_notes
    return pd.DataFrame([{"depth": p.depth, "token": label(vocab, p.token), "q(x)": p.q_x, "p(x)": p.p_x,
                          "h": n["stops"][i], "η": n["etas"][i], "result": "accepted" if i < n["tau"] else "rejected"}
                         for i, p in enumerate(r.positions)], columns=CHECK_COLUMNS)  # fmt: skip


def both_rules(r: RoundRecord) -> dict:
    """This draft's expected accepted tokens under each rule, and what block verification kept."""
    e = r.verify_notes["expected_accepted"]
    return {"lossless": e["lossless"], "block": e["block"], "tau": r.verify_notes["tau"]}


def summary(r: RoundRecord) -> str:
    """The panel's sentence: this draft's expected kept tokens under both rules, and what block kept (markdown)."""
    both = both_rules(r)
    return (f"**The same draft, verified both ways.** Expected kept tokens: **{both['lossless']:.2f}** "
            f"token-wise, **{both['block']:.2f}** with block verification, which kept **{both['tau']}** "
            "this time.")  # fmt: skip


def block_figure(r: RoundRecord, vocab: list[str]) -> go.Figure:
    """Per position: token-wise's chance of keeping it, block's weight w and stop h, and the
    draws eta (a draw under h passes)."""
    x = [f"{p.depth}: {plotly_text(label(vocab, p.token))}" for p in r.positions]
    n = r.verify_notes
    line = {"type": "scatter", "mode": "lines+markers", "x": x}
    data = [
        line | {"y": tokenwise_reach(r), "name": "token-wise: P(keeps it)", "line": {"color": "#E69F00"}},
        line | {"y": n["weights"], "name": "block: weight w", "line": {"color": "#0072B2", "dash": "dot"}},
        line | {"y": n["stops"], "name": "block: stop h", "line": {"color": "#0072B2"}},
        draws(x, n["etas"], "block: draw η (passes when η < h)", "#D55E00"),
    ]  # fmt: skip
    both = both_rules(r)
    title = (f"This draft under both rules<br><sub>expected kept: {both['lossless']:.2f} token-wise, "
             f"{both['block']:.2f} block; block kept {both['tau']} this time</sub>")  # fmt: skip
    return probability_figure(data, title, "draft position: token")
