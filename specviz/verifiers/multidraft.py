"""Multi-draft trees: how a node's children were drawn decides the q each is verified against.

A sampled tree (``Draft.sampling``) gives each node k children drawn from the draft model's
distribution q at that node, either

- **with replacement** (SpecInfer, Miao et al. 2024): k i.i.d. draws from q. Every child is
  tried against the same q; after each rejection the target's p becomes norm(max(p - q, 0)).
  Two children may be the same token: each is its own node, and a second copy is tried against
  the residual left by the first.
- **without replacement** (Sequoia, Chen et al. 2024; e.g. Gumbel-top-k): child i is drawn from
  q with the earlier children's tokens removed, q_i = norm(q_{i-1} with x_{i-1} zeroed). Child i
  is tried against q_i, so after a rejection *both* distributions change: p as above (with q_i),
  and q by removing the token just rejected. (A rejected x_i has p_i(x_i) < q_i(x_i), so the
  residual holds none of it either: the two updates agree.)

Both are lossless by the same induction (tokenwise.py): the proof never assumes anything about
the next child's q except that the child is drawn from the q it is tried against. The q update
needs only the draft (the tokens tried before a child are its earlier siblings, all rejected),
so it is computed here once per round, before any draw. mismatch.py shows what goes wrong when
the verifier assumes the wrong scheme.
"""

import torch

from specviz.core.sampling import without
from specviz.drafters.base import Draft
from specviz.verifiers.base import children_of, proposal_rows

SAMPLINGS = ("with-replacement", "without-replacement")


def next_sibling_q(q: torch.Tensor, x: int, sampling: str | None) -> torch.Tensor:
    """What the sibling after one drawn from ``q`` as token ``x`` was drawn from. (V,)"""
    return without(q, x) if sampling == "without-replacement" else q


def sibling_rows(draft: Draft, V: int, sampling: str | None) -> torch.Tensor:
    """The q each node is tried against, (N, V), if its siblings were drawn as ``sampling`` says
    (None: a chain, or deterministic children: each node's own q, one-hot if none)."""
    rows = proposal_rows(draft, V)
    if sampling not in SAMPLINGS:
        return rows
    out = rows.clone()
    for children in children_of(draft.parents).values():
        if not children:
            continue
        q = rows[children[0]]  # the node's draft distribution: what its first child was drawn from
        for c in children:
            out[c] = q
            q = next_sibling_q(q, draft.tokens[c], sampling)
    return out
