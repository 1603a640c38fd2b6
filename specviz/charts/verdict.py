"""The table of a round's checks, chosen by the rule that verified it (``verify_notes["rule"]``),
so a verifier with its own numbers gets its own table and the pages never ask which one ran.

Token-wise rules (lossless, the seed's, the mismatch) try one token at a time: the candidate
table. Block verification decides the chain jointly: its table puts both rules side by side.
"""

import pandas as pd

from specviz.charts import block, traversal
from specviz.charts.distributions import candidate_frame
from specviz.record import RoundRecord

CANDIDATE_HELP = {
    "depth": "Position in the draft: 1 is the first drafted character.",
    "q(x)": "The drafter's probability of the candidate (1 for a fixed guess).",
    "p(x)": "The target's probability of the candidate at this position.",
    "p/q": "The ratio the accept rule compares with the uniform draw.",
    "min(1, p/q)": "Probability of accepting the candidate.",
    "u": "The uniform draw: accept when u < min(1, p/q). None at temperature 0.",
    "result": "Accepted, or rejected (the round then draws from the residual).",
}
TABLES = {"block": (block.block_frame, block.HELP)}  # rule -> (table of the checks, column help)
TABLES |= {rule: (traversal.checks_frame, traversal.CHECK_HELP) for rule in traversal.RULES}


def checks_frame(r: RoundRecord, vocab: str) -> pd.DataFrame:
    return TABLES.get(r.verify_notes.get("rule"), (candidate_frame, None))[0](r, vocab)


def checks_help(r: RoundRecord) -> dict[str, str]:
    """Column name -> a sentence for the table's header tooltips."""
    return TABLES.get(r.verify_notes.get("rule"), (None, CANDIDATE_HELP))[1]


def same_draft(r: RoundRecord) -> dict | None:
    """This draft's expected accepted tokens under token-wise and block verification (block rounds;
    a traversal round's are drawn by its own panel, ui/traversal_view.py)."""
    return block.both_rules(r) if r.verify_notes.get("rule") == "block" else None
