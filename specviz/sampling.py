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
        return F.one_hot(logits.argmax(-1), logits.size(-1)).double()
    return F.softmax(logits / temperature, dim=-1)


def scale_probs(probs: torch.Tensor, temperature: float) -> torch.Tensor:
    """Apply temperature to a distribution (p^(1/T), renormalised), or one-hot at T = 0."""
    probs = probs.double()
    if temperature == 0:
        return F.one_hot(probs.argmax(-1), probs.size(-1)).double()
    if temperature == 1:
        return probs
    scaled = probs.clamp_min(1e-300).log().div(temperature)  # in log space: p^(1/T) underflows for small T
    return F.softmax(scaled, dim=-1)


def draw(probs: torch.Tensor, gen: torch.Generator) -> int:
    """One token from a distribution. A one-hot distribution returns its token without
    consuming randomness, so greedy runs never touch the generator."""
    top = int(probs.argmax())
    if probs[top] >= 1.0:
        return top
    return int(torch.multinomial(probs, 1, generator=gen))


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
