"""The acceptance-math toy of seed 003, with no model: a target distribution p and a draft
distribution q over a small vocabulary, and the accept/reject step between them.

    propose   x ~ q
    accept    with probability min(1, p(x)/q(x))
    correct   on rejection draw from the residual norm(max(0, p - q))

One step emits x with probability min(p(x), q(x)) + (1 - alpha) * residual(x) = p(x), where
alpha = sum min(p, q) = 1 - TV(p, q) is the chance a draft is accepted. The simulation checks
that empirically; redrawing from p instead of the residual (the mistake the page contrasts) emits
min(p, q) + (1 - alpha) p, which is not p unless p == q.
"""

from dataclasses import dataclass

import torch

from specviz.core.sampling import probs_from_logits, scale_probs
from specviz.teaching.exactness import chi_square, tv
from specviz.teaching.stats import expected_tokens_per_round

SHAPES = ("random", "bump")
CORRECTIONS = ("residual", "p")  # what a rejection draws from: the right rule, and the mistake
MAX_K = 8


def target_logits(V: int, shape: str, seed: int) -> torch.Tensor:
    """(V,) logits. 'random' is seed 003's (rand - 0.5) * 3; 'bump' is one smooth peak."""
    if shape == "random":
        gen = torch.Generator().manual_seed(seed)
        return (torch.rand(V, generator=gen, dtype=torch.float64) - 0.5) * 3
    i = torch.arange(V, dtype=torch.float64)
    return -0.5 * ((i - V / 3) / (V / 8)) ** 2


def make_pair(V: int = 32, shape: str = "random", sharpness: float = 1.0, temperature: float = 0.5, shift: int = 0,
              seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """(p, q), float64. p = softmax(sharpness * logits). q is p moved right by ``shift`` tokens
    (wrapping around, so a shift of V is none), at the draft's ``temperature``: q ∝ p^(1/T), one-hot on the argmax at 0
    (seed 003's drafter is T = 0.5: sharper than the target)."""
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}; choose one of: {', '.join(SHAPES)}")
    if not 2 <= V <= 256:
        raise ValueError(f"the vocabulary needs 2 to 256 tokens, got {V}")
    if not sharpness >= 0:
        raise ValueError(f"sharpness must be 0 or more, got {sharpness}")
    if not temperature >= 0:
        raise ValueError(f"the draft temperature must be 0 or more, got {temperature}")
    p = probs_from_logits(target_logits(V, shape, seed) * sharpness, 1.0)
    q = scale_probs(p.roll(shift), temperature)
    return p, q


@dataclass
class Overlap:
    overlap: torch.Tensor  # min(p, q): the mass accepted as drafted
    alpha: float  # sum of the overlap: the chance one draft is accepted
    excess: torch.Tensor  # max(0, p - q): what the draft under-proposes
    residual: torch.Tensor | None  # excess / (1 - alpha); None when p == q (never needed)


def overlap(p: torch.Tensor, q: torch.Tensor) -> Overlap:
    both = torch.minimum(p, q)
    excess = (p - q).clamp_min(0)
    mass = float(excess.sum())  # = 1 - alpha, up to rounding
    return Overlap(both, float(both.sum()), excess, excess / mass if mass > 1e-12 else None)


def _fallback(p: torch.Tensor, q: torch.Tensor, correction: str) -> torch.Tensor:
    if correction not in CORRECTIONS:
        raise ValueError(f"unknown correction {correction!r}; choose one of: {', '.join(CORRECTIONS)}")
    residual = overlap(p, q).residual
    # p == q: a rejection has probability 0, and p is then the right thing to draw from anyway.
    return p if correction == "p" or residual is None else residual


def output_distribution(p: torch.Tensor, q: torch.Tensor, correction: str = "residual") -> torch.Tensor:
    """The exact distribution of one step's output: min(p, q) + (1 - alpha) * fallback."""
    o = overlap(p, q)
    return o.overlap + (1 - o.alpha) * _fallback(p, q, correction)


@dataclass
class Simulation:
    tokens: torch.Tensor  # (n,) each step's output
    accepted: torch.Tensor  # (n,) bool: the draft was accepted


def simulate(p: torch.Tensor, q: torch.Tensor, n: int, seed: int = 0, correction: str = "residual") -> Simulation:
    """n independent accept/reject steps, seeded: the same arguments give the same steps."""
    if not 1 <= n <= 10_000_000:
        raise ValueError(f"the number of steps must be between 1 and 10,000,000, got {n}")
    fallback = _fallback(p, q, correction)
    gen = torch.Generator().manual_seed(seed)
    x = torch.multinomial(q, n, replacement=True, generator=gen)
    u = torch.rand(n, generator=gen, dtype=torch.float64)
    accepted = u * q[x] < p[x]  # u < p(x)/q(x), without dividing; q(x) > 0 since x ~ q
    rejected = int((~accepted).sum())
    if rejected:
        x[~accepted] = torch.multinomial(fallback, rejected, replacement=True, generator=gen)
    return Simulation(x, accepted)


def histogram(tokens: torch.Tensor, V: int) -> torch.Tensor:
    """Empirical frequencies, (V,) float64."""
    return torch.bincount(tokens, minlength=V).double() / len(tokens)


def convergence(tokens: torch.Tensor, p: torch.Tensor, points: int = 40) -> list[tuple[int, float]]:
    """(n, TV(histogram of the first n outputs, p)) at log-spaced n up to all of them."""
    N = len(tokens)
    ns = sorted({int(n) for n in torch.logspace(1, torch.log10(torch.tensor(float(N))), points).round()} | {N})
    return [(n, tv(histogram(tokens[:n], len(p)), p)) for n in ns if n <= N]


def fit(tokens: torch.Tensor, p: torch.Tensor) -> tuple[float, int, float | None]:
    """Pearson's chi-square of the outputs against p: (statistic, dof, p-value); the p-value is
    None when too few outputs leave two pooled cells to compare."""
    t = chi_square(torch.bincount(tokens, minlength=len(p)), p)
    return t.statistic, t.dof, t.p_value


def measured_tokens_per_round(accepted: torch.Tensor, k: int) -> float:
    """Cut the simulated accept flags into speculative rounds of at most k drafts: a round ends at
    its first rejection (its correction is the extra token) or after k acceptances (the bonus).
    Every round emits its accepted drafts + 1. Only complete rounds count."""
    flags = accepted.tolist()
    rounds = tokens = i = 0
    while i + k <= len(flags):
        run = 0
        while run < k and flags[i + run]:
            run += 1
        i += run + (run < k)  # a rejection used one more flag
        rounds, tokens = rounds + 1, tokens + run + 1
    return tokens / rounds if rounds else float("nan")


def per_k(alpha: float, accepted: torch.Tensor | None = None) -> list[dict]:
    """K = 1..8: the expected tokens per round, and the measured one from simulated flags."""
    rows = []
    for k in range(1, MAX_K + 1):
        row = {"k": k, "expected": expected_tokens_per_round(alpha, k), "most": k + 1}
        if accepted is not None:
            row["measured"] = measured_tokens_per_round(accepted, k)
        rows.append(row)
    return rows
