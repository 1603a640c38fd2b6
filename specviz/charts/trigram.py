"""The trigram drafter's view of a round: which table row drafted each position, and whether it
fell back to the bigram row because the context had too little evidence."""

import pandas as pd

from specviz.charts.distributions import label, label_text
from specviz.core.record import RoundRecord

COLUMNS = ["depth", "drafted", "row", "context", "evidence"]
HELP = {
    "depth": "The drafted position: 1 is the first character after the context.",
    "drafted": "The character the trigram drafter drew at this depth.",
    "row": "trigram: the row of the two characters before it; bigram: the fallback row of the one before "
    "it, when the two-character context was seen fewer than min_context_count times (or there was only one).",
    "context": "The two characters the trigram row is keyed by (the drafted ones count too, from depth 2 on).",
    "evidence": "How often that two-character context appears in the training text; below min_context_count "
    "the bigram row drafts instead. Empty when there was no previous character.",
}


def trigram_frame(r: RoundRecord, vocab: list[str]) -> pd.DataFrame:
    """One row per drafted position (COLUMNS); empty for drafters that are not the trigram. Five
    narrow columns: the table sits beside the text, ~300 px wide at 1024 px (min_context_count, the
    same for every row, is in its heading)."""
    rows = []
    for depth, (tok, note) in enumerate(zip(r.draft_tokens, r.draft_notes.get("positions", []), strict=False), 1):
        if "fallback" not in note and note.get("row") != "trigram":
            continue
        # The evidence that decided: how often the two-token context was seen in training.
        ctx = note.get("trigram_context", note.get("context", []))
        evidence = note.get("trigram_evidence", note.get("evidence")) if len(ctx) == 2 else None
        rows.append([depth, label(vocab, tok), note["row"], label_text(vocab, ctx), evidence])
    return pd.DataFrame(rows, columns=COLUMNS).astype({"evidence": "Int64"})  # counts, not floats: no 10818.000
