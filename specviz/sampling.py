"""Temperature and sampling, shared by the target and every drafter so both are scaled alike.

Temperature 0 means greedy: the distribution becomes one-hot on the argmax (ties go to the
lowest id, as torch.argmax does) and nothing random is drawn.
"""

import torch
from torch.nn import functional as F


def probs_from_logits(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """softmax(logits / T) in float64, or one-hot argmax at T = 0. (..., V) -> (..., V)"""
    logits = logits.double()
    if temperature == 0:
        return one_hot_argmax(logits)
    return F.softmax(logits / temperature, dim=-1)


def one_hot_argmax(x: torch.Tensor) -> torch.Tensor:
    """1.0 at each row's argmax, 0 elsewhere, float64. (Not F.one_hot: it checks its input's range
    first, ~20 us a call, and the engine makes one every greedy round.) (..., V) -> (..., V)"""
    return torch.zeros(x.shape, dtype=torch.float64, device=x.device).scatter_(-1, x.argmax(-1, keepdim=True), 1.0)


def scale_probs(probs: torch.Tensor, temperature: float) -> torch.Tensor:
    """Apply temperature to a distribution (p^(1/T), renormalised), or one-hot at T = 0."""
    probs = probs.double()
    if temperature == 0:
        return one_hot_argmax(probs)
    if temperature == 1:
        return probs
    scaled = probs.clamp_min(1e-300).log().div(temperature)  # in log space: p^(1/T) underflows for small T
    return F.softmax(scaled, dim=-1)


def draw(probs: torch.Tensor, gen: torch.Generator) -> int:
    """One token from a distribution. A one-hot distribution returns its token without
    consuming randomness, so greedy runs never touch the generator.

    An exponential race: each token's clock rings after an Exp(1) wait divided by its probability,
    and the first to ring, argmax p_i / E_i, is token i with probability p_i. It is torch.multinomial's
    own method for one sample (the same draws from the same generator: tests/test_sampling.py) without
    its input checks: a draw in a round took ~60 us with them, ~25 us without (medians, T = 0.8)."""
    if float(probs.max()) >= 1.0:  # one-hot (the cheapest test: a sampled row rarely is)
        return int(probs.argmax())
    clocks = torch.empty_like(probs).exponential_(1.0, generator=gen)  # (V,)
    return int((probs / clocks).argmax())


def uniform(gen: torch.Generator) -> float:
    """A uniform draw in [0, 1)."""
    return float(torch.rand((), generator=gen, dtype=torch.float64))


def without(q: torch.Tensor, x: int) -> torch.Tensor:
    """q with token x removed and renormalised: what the next sibling of a tree sampled without
    replacement is drawn from. All zeros once nothing is left. (V,)"""
    q = q.clone()
    q[x] = 0.0
    total = float(q.sum())
    return q / total if total > 0 else q
