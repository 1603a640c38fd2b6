"""The step page picks a round's method panels by name: each drafter and verifier class names the
panels it wants (``panels``), and ui/method_views.py's PANELS maps each name to its panel."""

from specviz.drafters import REGISTRY
from specviz.verifiers import VERIFIERS
from ui.method_views import PANELS, TREE_PAGE_PANELS


def test_each_method_names_panels_that_exist():
    named = {n: c.panels for n, c in REGISTRY.items()} | {v.name: v.panels for v in VERIFIERS.values()}
    assert all(set(panels) <= PANELS.keys() | set(TREE_PAGE_PANELS) for panels in named.values())
    assert {name: panels for name, panels in named.items() if panels} == {
        "trie": ("n-gram trie",),  # drawn on the tree page
        "lookahead": ("lookahead window",),
        "medusa": ("medusa heads",),
        "eagle1": ("eagle features",),
        "eagle3": ("eagle features",),
        "eagle3-tree": ("eagle features",),
        "mtp": ("mtp modules",),
        "dflash": ("parallel slots",),
        "dflash-tree": ("parallel slots",),
        "block": ("block weights",),
        "traversal": ("traversal tries",),
        "traversal-token-residual": ("traversal tries",),
        "fly": ("fly gate",),
    }
