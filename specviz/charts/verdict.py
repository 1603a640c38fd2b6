"""The table of a round's checks, chosen by the rule that verified it (``verify_notes["rule"]``),
so a verifier with its own numbers gets its own table and the pages never ask which one ran.

Token-wise rules (lossless, the seed's, the mismatch) try one token at a time: the candidate
table. Block verification decides the chain jointly: its table puts both rules side by side.
"""

import pandas as pd

from specviz.charts import block, traversal
from specviz.charts.distributions import candidate_frame
from specviz.core.record import RoundRecord

# p and q in words, under every table or chart that shows p/q
PQ_WORDS = "p is the target's probability of a character and q is the drafter's probability of it"
CANDIDATE_HELP = {
    "depth": "d, the depth: the candidate's position in the draft; 1 is the first drafted character.",
    "token": "x, the candidate: the drafted character the target checks.",
    "q(x)": "The drafter's probability of the candidate (1 for a fixed guess).",
    "p(x)": "The target's probability of the candidate at this position.",
    "p/q": "p(x) / q(x). The lossless rule accepts the candidate with probability min(1, p/q): when the "
    "uniform draw u < p/q.",
    "u": "The uniform draw: accept when u < min(1, p/q), the same as u < p/q. None at temperature 0.",
    "result": "✔ accepted, ✘ rejected (the round then draws from the residual).",
}
# The candidate table sits beside the text, ~300 px wide at 1024 px with the sidebar open: seven
# columns fit there with one-letter headers for depth and token (CANDIDATE_HELP spells them out),
# widths in pixels (3 decimals; p/q up to "99.999"; depth up to K = 16), and the result as a mark.
RESULT_MARKS = {"accepted": "✔", "rejected": "✘"}
CANDIDATE_VIEW = {"depth": {"label": "d", "width": 32}, "token": {"label": "x", "width": 28},
                  "result": {"width": 56, "marks": RESULT_MARKS}, "q(x)": {"width": 44}, "p(x)": {"width": 44},
                  "p/q": {"width": 52}, "u": {"width": 44}}  # fmt: skip
# A narrow table's view: the candidate table's short headers and widths, for the columns it shares.
NARROW_VIEW = CANDIDATE_VIEW | {"h": {"width": 44}, "η": {"width": 44}, "α": {"width": 44}}
# rule -> (table of the checks, column help); every such table fits the candidate table's ~300 px
TABLES = {"block": (block.checks_frame, block.CHECK_HELP)}
TABLES |= {rule: (traversal.checks_frame, traversal.CHECK_HELP) for rule in traversal.RULES}


def checks_frame(r: RoundRecord, vocab: list[str]) -> pd.DataFrame:
    return TABLES.get(r.verify_notes.get("rule"), (candidate_frame, None))[0](r, vocab)


def checks_help(r: RoundRecord) -> dict[str, str]:
    """Column name -> a sentence for the table's header tooltips."""
    return TABLES.get(r.verify_notes.get("rule"), (None, CANDIDATE_HELP))[1]


def checks_view(r: RoundRecord) -> dict[str, dict]:
    """Column name -> how to show it where it is not the default: a header ("label"), a width in
    pixels ("width"), marks shown in place of its values ("marks")."""
    return NARROW_VIEW if r.verify_notes.get("rule") in TABLES else CANDIDATE_VIEW


def same_draft(r: RoundRecord) -> dict | None:
    """This draft's expected accepted tokens under token-wise and block verification (block rounds;
    a traversal round's are drawn by its own panel, ui/traversal_view.py)."""
    return block.both_rules(r) if r.verify_notes.get("rule") == "block" else None
