"""Every drafter, registered by name. A method is its file (a Drafter subclass with its traits, build
and check: see base.py) plus one line in the tuple below; the engine, the CLI, the bench, the atlas
and the app read the registry and name no drafter themselves."""

from specviz.drafters.base import Draft, Drafter, Sources, chain
from specviz.drafters.bigram import BigramDrafter
from specviz.drafters.dflash import DFlashDrafter
from specviz.drafters.dflash_tree import DFlashTreeDrafter
from specviz.drafters.distilled import DistilledDrafter, DistilledTreeDrafter
from specviz.drafters.eagle import Eagle1Drafter, EagleDrafter
from specviz.drafters.eagle_tree import EagleTreeDrafter
from specviz.drafters.layer_skip import LayerSkipDrafter
from specviz.drafters.lookahead import LookaheadDrafter
from specviz.drafters.medusa import MedusaDrafter
from specviz.drafters.mtp import MTPDrafter
from specviz.drafters.nasd import NASDDrafter
from specviz.drafters.neural import NeuralDrafter
from specviz.drafters.neural_tree import NeuralTreeDrafter
from specviz.drafters.none import NoDrafter
from specviz.drafters.prompt_lookup import PromptLookupDrafter
from specviz.drafters.suffix import SuffixDrafter
from specviz.drafters.trie import TrieDrafter
from specviz.drafters.trigram import TrigramDrafter

REGISTRY: dict[str, type[Drafter]] = {}
BASELINE = NoDrafter.name  # plain decoding: the drafter every speedup is measured against


def register(cls: type[Drafter]) -> type[Drafter]:
    """Add a drafter class under its name; the CLI, the app and the atlas list it from then on."""
    REGISTRY[cls.name] = cls
    return cls


for _cls in (  # the order the CLI, the app and the atlas list them in
    NoDrafter,
    BigramDrafter,
    TrigramDrafter,
    TrieDrafter,
    NASDDrafter,
    PromptLookupDrafter,
    NeuralDrafter,
    NeuralTreeDrafter,
    DistilledDrafter,
    DistilledTreeDrafter,
    SuffixDrafter,
    LayerSkipDrafter,
    LookaheadDrafter,
    MedusaDrafter,
    Eagle1Drafter,
    EagleDrafter,
    EagleTreeDrafter,
    MTPDrafter,
    DFlashDrafter,
    DFlashTreeDrafter,
):
    register(_cls)


def drafter_names(**traits) -> tuple[str, ...]:
    """The registered drafters whose class traits have these values: drafter_names(tree=True)."""
    return tuple(n for n, c in REGISTRY.items() if all(getattr(c, t) == v for t, v in traits.items()))


def drafter_class(name: str) -> type[Drafter]:
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown drafter {name!r}; choose one of: {', '.join(REGISTRY)}") from None


def check_tokens(cls: type[Drafter], checkpoint) -> None:
    """ValueError, one line, where the drafter cannot draft this checkpoint's tokens (Drafter.bpe)."""
    if getattr(checkpoint, "bpe", False) and not cls.bpe:
        raise ValueError(f"the {cls.name} drafter works on the character model only, not on a real model's "
                         f"word pieces; on one, choose: {', '.join(drafter_names(bpe=True))}")  # fmt: skip


def make_drafter(src: Sources) -> Drafter:
    """The drafter ``src.settings`` names, built for one generation."""
    cls = drafter_class(src.settings.drafter)
    check_tokens(cls, src.checkpoint)
    return cls.build(src)


__all__ = ["BASELINE", "REGISTRY", "Draft", "Drafter", "NoDrafter", "Sources", "chain", "check_tokens",
           "drafter_class", "drafter_names", "make_drafter", "register"]  # fmt: skip
