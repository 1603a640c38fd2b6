"""The verifier interface: given a draft and the target's distributions at every drafted node
(one forward pass), decide which drafted tokens to keep and draw the round's last token.

Every verifier returns a ``Verdict``: the accepted path (root to leaf), every drafted token it
tried (``PositionRecord``), and the round's last token, either a *correction* drawn from a
residual after a rejection or a *bonus* drawn from the target after a fully accepted path. A
verifier is *lossless* when the emitted tokens are distributed exactly as the target would
sample them; the lossy ones are kept, labelled, so the exactness lab can show them failing.
"""

from dataclasses import dataclass, field
from functools import cache

import torch

from specviz.core.record import PositionRecord
from specviz.core.sampling import LARGE_ROW
from specviz.drafters.base import Draft


class OneHots:
    """A real model's one-hot rows (V > LARGE_ROW), each made when asked: an identity of V^2 floats would not fit."""

    def __init__(self, V: int):
        self.V = V

    def __getitem__(self, x) -> torch.Tensor:
        if isinstance(x, list):
            return torch.zeros(len(x), self.V, dtype=torch.float64).scatter_(1, torch.tensor(x)[:, None], 1.0)
        return torch.zeros(self.V, dtype=torch.float64).index_fill_(0, torch.tensor(int(x)), 1.0)


@cache
def one_hot_rows(V: int) -> torch.Tensor | OneHots:
    """Row x is the one-hot q of a deterministic proposal x; rows are shared views, never written. (V, V)"""
    return OneHots(V) if V > LARGE_ROW else torch.eye(V, dtype=torch.float64)


@cache
def one_hots(V: int) -> tuple[torch.Tensor, ...] | OneHots:
    """one_hot_rows(V)'s rows, as views made once: a tuple look-up, where indexing the tensor makes a
    new view each time (~1 us, more in a round). (V,) each"""
    return one_hot_rows(V) if V > LARGE_ROW else one_hot_rows(V).unbind(0)


@dataclass
class Verdict:
    checks: list[PositionRecord] = field(default_factory=list)  # every drafted token tried, in order
    path: list[int] = field(default_factory=list)  # accepted draft nodes, root to leaf
    residual: torch.Tensor | None = None  # (V,) what the correction was drawn from
    correction: int | None = None
    bonus_p: torch.Tensor | None = None  # (V,) what the bonus token was drawn from
    bonus: int | None = None
    notes: dict = field(default_factory=dict)  # the verifier's own record (JSON-serialisable)

    def emitted(self, draft: Draft) -> list[int]:
        last = self.correction if self.correction is not None else self.bonus
        return [draft.tokens[i] for i in self.path] + [last]


def children_of(parents: list[int]) -> dict[int, list[int]]:
    """Node -> its children in draft order (-1 is the root)."""
    kids: dict[int, list[int]] = {i: [] for i in range(-1, len(parents))}
    for i, parent in enumerate(parents):
        kids[parent].append(i)
    return kids


def proposal_rows(draft: Draft, V: int) -> torch.Tensor:
    """q per drafted node, (N, V): the distribution the node was drawn from, one-hot for a
    deterministic proposal. For a chain or a tree whose siblings were drawn independently, this is
    what the draft says; ``specviz.verifiers.multidraft`` derives it for siblings drawn without
    replacement."""
    if draft.q is not None:
        return draft.q
    return one_hot_rows(V)[draft.tokens] if draft.tokens else torch.zeros(0, V, dtype=torch.float64)


class Verifier:
    """Base class. ``verify(draft, p_rows, temperature, gen)``: p_rows is (N+1, V), row 0 the
    target's distribution after the root, row i+1 after node i; draws use ``gen`` only."""

    name = "base"  # the registry's key: --verification, the app's choice
    panels: tuple[str, ...] = ()  # the step page's panels for its rounds, by name (ui/method_views.py PANELS)
    lossless = True  # False: kept, and labelled LOSSY, so the exactness lab can show it failing
    trees = True  # can verify trees (else chains only)
    summary = ""  # one line for the app and the CLI's help
    paper = ""  # the paper or post it follows, by name (the atlas)
    showcase: tuple[str, ...] = ()  # drafters the atlas and the bench show it with (besides token-wise)
    how = ""  # what it does to those drafts, after the drafter's summary in the atlas
    bench_on = ""  # a lossless alternative the bench runs on every drafter of a shape: "chains" or "trees"

    def configured(self, settings) -> "Verifier":
        """The rule with the run's own knobs (settings' knobs scoped to it: Knob.verification); most have none."""
        return self

    def refuses(self, drafter, settings) -> str | None:
        """Why this rule cannot check what the drafter class sends under these settings (None: it can)."""
        if drafter.tree and not self.trees:
            return f"{self.name} verification checks chains only; the {drafter.name} drafter sends trees"
        return None

    def verify(self, draft: Draft, p_rows: torch.Tensor, temperature: float, gen: torch.Generator) -> Verdict:
        raise NotImplementedError
