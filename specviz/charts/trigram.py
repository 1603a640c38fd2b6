"""The trigram drafter's view of a round: which table row drafted each position, and whether it
fell back to the bigram row because the context had too little evidence."""

import pandas as pd

from specviz.charts.distributions import label, label_text
from specviz.record import RoundRecord


def trigram_frame(r: RoundRecord, vocab: str, min_context_count: int) -> pd.DataFrame:
    """One row per drafted position; empty for drafters that are not the trigram."""
    rows = []
    for depth, (tok, note) in enumerate(zip(r.draft_tokens, r.draft_notes.get("positions", []), strict=False), 1):
        if "fallback" not in note and note.get("row") != "trigram":
            continue
        # The evidence that decided: how often the two-token context was seen in training.
        ctx = note.get("trigram_context", note.get("context", []))
        evidence = note.get("trigram_evidence", note.get("evidence")) if len(ctx) == 2 else None
        rows.append({"depth": depth, "drafted": label(vocab, tok), "row used": note["row"],
                     "context": label_text(vocab, ctx), "evidence": evidence,
                     "min_context_count": min_context_count, "fallback": note.get("fallback", "")})  # fmt: skip
    return pd.DataFrame(rows, columns=["depth", "drafted", "row used", "context", "evidence", "min_context_count",
                                       "fallback"])  # fmt: skip
