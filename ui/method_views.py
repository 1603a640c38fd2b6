"""Per-method panels on the step page. A method that records something of its own (in its draft
notes or its verifier's notes) draws it in a panel of its own file, ui/<method>_view.py, listed
here; round_view calls every panel for every round, and a panel draws nothing for a round that is
not its method's. So a new method never adds a branch to round_view."""

from collections.abc import Callable

from specviz.record import RoundRecord
from ui.eagle_view import eagle_panel

# Each: panel(record, vocab) -> None. Append one line per method.
PANELS: list[Callable[[RoundRecord, str], None]] = []
PANELS.append(eagle_panel)


def method_panels(r: RoundRecord, vocab: str) -> None:
    for panel in PANELS:
        panel(r, vocab)
