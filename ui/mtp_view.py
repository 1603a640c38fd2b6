"""The mtp drafter's panel on the step page: one row per draft depth, the module that drafted it (module k
for depth k), the rows that module's pass fed (the ones its accepted tokens made true since its last pass,
and the ones that read this round's draft tokens), the character drawn, its q and what the target made of
it. Drawn for the rounds of a drafter that names it (MTPDrafter.panels); draws nothing for a round whose
notes hold no passes (a skipped or adaptive-K idle round)."""

import pandas as pd
import streamlit as st

from specviz.charts.distributions import label
from specviz.core.record import RoundRecord
from ui.widgets import table

HELP = {
    "depth": "The draft depth: the k-th character after the root.",
    "module": "The MTP module that drafted it: module k drafts depth k (one module per depth, its own weights).",
    "rows fed": "Entries this module's pass ran: from the first one whose characters changed since its last pass "
    "(an entry that read only accepted characters is kept) to the last, its scratch entries among them.",
    "scratch": "Entries that read a character drafted this round (k − 1 of them for module k): kept next round "
    "only if those characters are accepted.",
    "token": "The character drawn from the module's distribution q.",
    "q": "The module's probability of the character it drew (at the run's temperature).",
    "result": "What the target made of it: accepted, rejected, or not reached (a rejection came before).",
}


def mtp_panel(r: RoundRecord, vocab: list[str]) -> None:
    notes = r.draft_notes
    if not notes.get("passes"):  # no module ran this round
        return
    st.markdown(f"**Multi-token prediction (MTP) modules.** {notes['modules']} modules, one per depth, over {notes['entries_cached']} "
                "context entries: module 1 read the target's own top-layer feature of the character before the "
                "root and the root; module k read module k − 1's state and the character drafted at depth k − 1. "
                "These modules were trained after the target, on its frozen features; DeepSeek-V3 trains them "
                "with the model, whose features then carry more about later characters.")  # fmt: skip
    verdicts = [p.accepted for p in r.positions]
    rows = [{"depth": p["depth"], "module": p["depth"], "rows fed": p["rows"], "scratch": p["scratch"],
             "token": label(vocab, d["token"]), "q": d["q"],
             "result": ("accepted" if verdicts[i] else "rejected") if i < len(verdicts) else "not reached"}
            for i, (p, d) in enumerate(zip(notes["passes"], notes["predicted"], strict=False))]  # fmt: skip
    table(pd.DataFrame(rows), HELP, vocab=vocab)
