"""Every verifier behind one interface (see base.py), looked up by name.

    lossless              token-wise, down a chain or a tree (tokenwise.py); siblings' q as drawn (multidraft.py)
    block                 block verification of a chain (block.py)
    nasd-seed             seed 004's biased rule, chains only (nasd_seed.py)
    replacement-mismatch  a without-replacement tree verified as with replacement: biased on purpose (mismatch.py)
    typical               Medusa's typical acceptance: faster, lossy (typical.py)
    traversal             traversal verification: leaves first, sequence-level ratios, any tree (traversal.py)
    traversal-token-residual  traversal with the token-level residual: biased on purpose (traversal.py)

A new verification method is a new file here and a line in VERIFIERS, never a branch in the engine.
"""

from specviz.verifiers.base import Verdict, Verifier, children_of, one_hot_rows, proposal_rows
from specviz.verifiers.block import Block, expected_accepted
from specviz.verifiers.mismatch import Mismatch
from specviz.verifiers.multidraft import SAMPLINGS, sibling_rows
from specviz.verifiers.nasd_seed import NASDSeed
from specviz.verifiers.tokenwise import TokenWise, expected_acceptance, residual
from specviz.verifiers.traversal import Traversal, TraversalTokenResidual
from specviz.verifiers.typical import Typical

VERIFIERS: dict[str, Verifier] = {v.name: v for v in (TokenWise(), Block(), NASDSeed(), Mismatch(), Typical())}
VERIFIERS |= {v.name: v for v in (Traversal(), TraversalTokenResidual())}
VARIANTS = tuple(VERIFIERS)


def get_verifier(name: str) -> Verifier:
    try:
        return VERIFIERS[name]
    except KeyError:
        raise ValueError(f"unknown verification {name!r}; choose one of: {', '.join(VARIANTS)}") from None


__all__ = ["SAMPLINGS", "VARIANTS", "VERIFIERS", "Block", "Mismatch", "NASDSeed", "TokenWise", "Traversal", "TraversalTokenResidual", "Typical", "Verdict",
           "Verifier", "children_of", "expected_accepted", "expected_acceptance", "get_verifier", "one_hot_rows",
           "proposal_rows", "residual", "sibling_rows"]  # fmt: skip
