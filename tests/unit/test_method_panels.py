"""The step page picks a round's method panels by name: each drafter and verifier class names the
panels it wants (``panels``), and ui/method_views.py's PANELS maps each name to its panel."""

from specviz.drafters import Drafter
from specviz.verifiers import VERIFIERS
from ui.method_views import PANELS


def subclasses(cls: type) -> list[type]:
    return [c for sub in cls.__subclasses__() for c in (sub, *subclasses(sub))]


def test_each_method_names_panels_that_exist():
    named = {c.name: c.panels for c in subclasses(Drafter)} | {v.name: v.panels for v in VERIFIERS.values()}
    assert all(set(panels) <= PANELS.keys() for panels in named.values())
    assert {name: panels for name, panels in named.items() if panels} == {
        "medusa": ("medusa",),
        "eagle3": ("eagle",),  # eagle1 too: one class, named per instance
        "eagle3-tree": ("eagle",),
        "lookahead": ("lookahead",),
        "traversal": ("traversal",),
        "traversal-token-residual": ("traversal",),
    }
