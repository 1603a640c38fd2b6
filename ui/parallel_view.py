"""The parallel drafters' panel on the step page (DFlash's chain, DDTree): the K slots one head pass filled,
each slot's distribution, the token each slot proposed and which slots the target accepted. Drawn for the rounds
of a drafter that names it (DFlashDrafter.panels); draws nothing for a round whose notes hold no slots (a
skipped round, an adaptive-K idle round)."""

import streamlit as st

from specviz.charts.parallel import slots_figure
from specviz.core.record import RoundRecord
from ui.widgets import chart


def parallel_panel(r: RoundRecord, vocab: list[str]) -> None:
    notes = r.draft_notes
    if not notes.get("slots"):
        return
    tree, fed, walked = "tree" in notes, notes.get("entries_fed", 0), len(r.accepted_path)
    how = ("Each slot's character was drawn from its own distribution." if notes["slots"].get("drawn", True)
           else "At T = 0 each slot proposed its most likely character.")  # fmt: skip
    st.markdown(f"**Parallel drafting: {len(notes['slots']['top'])} slots in one pass.** The head read the target's own "
                f"features ({fed} new context {'entry' if fed == 1 else 'entries'}, written by the last verify pass: "
                f"no extra target pass) and filled every slot at once: slot 1 from the root character, slots 2 and on "
                "from mask embeddings. No slot saw the characters chosen in the slots before it. "
                + ("The tree keeps the paths with the highest product of slot probabilities, within the node budget "
                   f"({notes.get('nodes')}); the target walked {walked} {'level' if walked == 1 else 'levels'} down it."
                   if tree else how))  # fmt: skip
    chart(slots_figure(notes, len(r.accepted_path), vocab), f"parallel_slots_{r.index}", vocab=vocab)
