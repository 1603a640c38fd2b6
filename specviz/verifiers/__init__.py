"""Every verifier, registered by name. A method is its file (a Verifier subclass with its traits: see
base.py) plus one line in the tuple below; the engine never branches on a rule.

    lossless              token-wise, down a chain or a tree (tokenwise.py); siblings' q as drawn (multidraft.py)
    block                 block verification of a chain (block.py)
    nasd-seed             NASD's own greedy-matching rule, chains only: biased (nasd_seed.py)
    replacement-mismatch  a without-replacement tree verified as with replacement: biased on purpose (mismatch.py)
    typical               Medusa's typical acceptance: faster, lossy (typical.py)
    traversal             traversal verification: leaves first, sequence-level ratios, any tree (traversal.py)
    traversal-token-residual  traversal with the token-level residual: biased on purpose (traversal.py)
    fly                   FLy: a rejection deferred where the target is unsure; faster, lossy (fly.py)
"""

from specviz.verifiers.base import Verdict, Verifier, children_of, one_hot_rows, proposal_rows
from specviz.verifiers.block import Block, expected_accepted
from specviz.verifiers.fly import FLy
from specviz.verifiers.mismatch import Mismatch
from specviz.verifiers.multidraft import SAMPLINGS, sibling_rows
from specviz.verifiers.nasd_seed import NASDSeed
from specviz.verifiers.tokenwise import TokenWise, expected_acceptance, residual
from specviz.verifiers.traversal import Traversal, TraversalTokenResidual
from specviz.verifiers.typical import Typical

VERIFIERS: dict[str, Verifier] = {}
LOSSLESS = TokenWise.name  # token-wise verification: the default rule, and the bench's main suite's


def register(verifier: Verifier) -> Verifier:
    """Add a verifier under its name; the CLI, the app and the atlas list it from then on."""
    VERIFIERS[verifier.name] = verifier
    return verifier


for _v in (TokenWise(), Block(), NASDSeed(), Mismatch(), Typical(), Traversal(), TraversalTokenResidual(), FLy()):
    register(_v)


def verifier_names(**traits) -> tuple[str, ...]:
    """The registered verifiers whose traits have these values: verifier_names(lossless=False)."""
    return tuple(n for n, v in VERIFIERS.items() if all(getattr(v, t) == x for t, x in traits.items()))


def get_verifier(name: str) -> Verifier:
    try:
        return VERIFIERS[name]
    except KeyError:
        raise ValueError(f"unknown verification {name!r}; choose one of: {', '.join(VERIFIERS)}") from None


def alternatives() -> dict[str, str]:
    """The lossless rules the bench runs beside token-wise: rule -> the drafts it takes ("chains", "trees")."""
    return {v.name: v.bench_on for v in VERIFIERS.values() if v.lossless and v.bench_on}


def verifier_label(name: str) -> str:
    """A verifier's option label: the lossy ones say so wherever they are chosen."""
    return name if VERIFIERS[name].lossless else f"{name} (lossy)"


__all__ = ["LOSSLESS", "SAMPLINGS", "VERIFIERS", "Block", "FLy", "Mismatch", "NASDSeed", "TokenWise", "Traversal",
           "TraversalTokenResidual", "Typical", "Verdict", "Verifier", "alternatives", "children_of", "expected_accepted",
           "expected_acceptance", "get_verifier", "one_hot_rows", "proposal_rows", "register", "residual",
           "sibling_rows", "verifier_label", "verifier_names"]  # fmt: skip
