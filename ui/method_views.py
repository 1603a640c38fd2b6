"""Per-method panels on the step page. A method that records something of its own (in its draft
notes or its verifier's notes) draws it in a panel of its own file, ui/<method>_view.py, listed
in PANELS under a name; its drafter or verifier class names the panels it wants (``panels``, a
class attribute: specviz/drafters/base.py, specviz/verifiers/base.py). round_view draws, for each
round, the panels its run's drafter and verifier name, so a new method never adds a branch to
round_view. A panel still draws nothing for a round whose notes lack what it shows (a skipped or
an adaptive-K idle round)."""

from collections.abc import Callable

from specviz.core.engine import Generation
from specviz.core.record import RoundRecord
from ui.block_view import block_panel
from ui.eagle_view import eagle_panel
from ui.fly_view import fly_panel
from ui.lookahead_view import lookahead_panel
from ui.medusa_view import medusa_panel
from ui.mtp_view import mtp_panel
from ui.parallel_view import parallel_panel
from ui.traversal_view import traversal_view

# name -> panel(record, vocab) -> None; drawn in this order. One line per method.
PANELS: dict[str, Callable[[RoundRecord, list[str]], None]] = {
    "block weights": block_panel,
    "traversal tries": traversal_view,
    "lookahead window": lookahead_panel,
    "medusa heads": medusa_panel,
    "eagle features": eagle_panel,
    "fly gate": fly_panel,
    "mtp modules": mtp_panel,
    "parallel slots": parallel_panel,
}
TRIE = "n-gram trie"  # the trie drafter's trie, drawn by the tree page (ui/tree_view.py)
TREE_PAGE_PANELS = (TRIE,)  # named by drafters, drawn on the tree page rather than here


def method_panels(r: RoundRecord, generation: Generation) -> None:
    """The panels the run's drafter and verifier name, for round ``r``."""
    wanted = {*generation.drafter.panels, *generation.verifier.panels}
    # A misspelt name would otherwise draw nothing, silently.
    if unknown := wanted - PANELS.keys() - set(TREE_PAGE_PANELS):
        raise KeyError(f"no panel named {', '.join(sorted(unknown))} in ui/method_views.py PANELS")
    for name, panel in PANELS.items():
        if name in wanted:
            panel(r, generation.trace.vocab)
