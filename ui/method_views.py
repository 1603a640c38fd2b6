"""Per-method panels on the step page. A method that records something of its own (in its draft
notes or its verifier's notes) draws it in a panel of its own file, ui/<method>_view.py, listed
here; round_view calls every panel for every round, and a panel draws nothing for a round that is
not its method's. So a new method never adds a branch to round_view."""

from collections.abc import Callable

from specviz.core.record import RoundRecord
from ui.eagle_view import eagle_panel
from ui.lookahead_view import lookahead_panel
from ui.medusa_view import medusa_panel
from ui.traversal_view import traversal_view

# Each: panel(record, vocab) -> None. Append one line per method.
PANELS: list[Callable[[RoundRecord, str], None]] = []
PANELS.append(traversal_view)
PANELS.append(lookahead_panel)
PANELS.append(medusa_panel)
PANELS.append(eagle_panel)


def method_panels(r: RoundRecord, vocab: list[str]) -> None:
    for panel in PANELS:
        panel(r, vocab)
