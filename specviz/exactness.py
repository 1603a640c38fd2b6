"""Is speculative decoding lossless? Compare the first few tokens of many speculative runs
with the target's exact distribution over them, computed by enumeration.

The exact joint P(x1, x2, x3 | prompt) needs the target's distribution after the prompt, after
every prompt + a and after every prompt + a b: V^2 sequences in one batched forward pass. The
test is Pearson's chi-square over the outcomes whose expected count is at least 5 (the rest
pooled into one bin), with the total variation distance beside it.
"""

from dataclasses import dataclass, replace

import torch

from models.checkpoint import Checkpoint
from specviz.engine import Generation, Settings
from specviz.sampling import probs_from_logits


@torch.no_grad()
def exact_distribution(model, prompt: list[int], temperature: float, n_tokens: int = 3) -> torch.Tensor:
    """Joint distribution of the next n_tokens (1..3) after the prompt. (V,) * n_tokens"""
    V = model.config.vocab_size
    L = len(prompt)
    if L + n_tokens - 1 > model.config.block_size:
        raise ValueError("prompt too long for the exact enumeration; use a shorter prompt")
    device = next(model.parameters()).device
    tails = (
        torch.cartesian_prod(*[torch.arange(V)] * (n_tokens - 1)).view(-1, n_tokens - 1)
        if n_tokens > 1
        else torch.zeros(1, 0, dtype=torch.long)
    )
    joint = torch.zeros([V] * n_tokens, dtype=torch.float64)
    flat = joint.view(-1, V)  # one row per tail: P(tail, next)
    for i in range(0, len(tails), 512):
        chunk = tails[i : i + 512]  # (B, n-1)
        idx = torch.cat([torch.tensor(prompt).expand(len(chunk), L), chunk], dim=1).to(device)  # (B, L+n-1)
        logits, _ = model(idx, torch.arange(idx.size(1), device=device))
        p = probs_from_logits(logits[:, L - 1 :], temperature).cpu()  # (B, n, V)
        prob = torch.ones(len(chunk), dtype=torch.float64)
        for j in range(n_tokens - 1):  # probability of the tail itself
            prob = prob * p[:, j].gather(1, chunk[:, j : j + 1]).squeeze(1)
        flat[i : i + len(chunk)] = prob[:, None] * p[:, -1]
    return joint


@dataclass
class ExactnessResult:
    samples: int
    statistic: float
    dof: int
    p_value: float
    tv_distance: float
    observed: torch.Tensor  # counts, same shape as expected
    expected: torch.Tensor  # probabilities


def tv(a: torch.Tensor, b: torch.Tensor) -> float:
    """Total variation distance: half the L1 distance, the most any event's probability differs."""
    return 0.5 * float((a - b).abs().sum())


def chi_square(counts: torch.Tensor, probs: torch.Tensor) -> tuple[float, int, float]:
    """Pearson's chi-square of counts against probs, bins with expected >= 5, rest pooled."""
    n = counts.sum().item()
    c, e = counts.flatten().double(), probs.flatten() * n
    big = e >= 5
    obs, exp = c[big], e[big]
    pooled_o, pooled_e = c[~big].sum(), e[~big].sum()
    if pooled_e >= 5:
        obs, exp = torch.cat([obs, pooled_o[None]]), torch.cat([exp, pooled_e[None]])
    elif len(exp):  # too little mass to stand alone: fold it into the smallest bin
        j = exp.argmin()
        obs[j] += pooled_o
        exp[j] += pooled_e
    dof = len(exp) - 1
    if dof <= 0:  # a single outcome (temperature 0): exact iff every sample is that outcome
        ok = bool(c[~big].sum() == 0) if big.any() else False
        return 0.0 if ok else float("inf"), 0, 1.0 if ok else 0.0
    stat = float(((obs - exp) ** 2 / exp).sum())
    p = float(
        torch.special.gammaincc(torch.tensor(dof / 2, dtype=torch.float64), torch.tensor(stat / 2, dtype=torch.float64))
    )
    return stat, dof, p


def run_exactness(target: Checkpoint, prompt: list[int], settings: Settings, samples: int, draft_model=None,
                  n_tokens: int = 3, progress=None) -> ExactnessResult:  # fmt: skip
    """Run ``samples`` speculative generations of n_tokens (seeds settings.seed + i)."""
    V = target.config.vocab_size
    expected = exact_distribution(target.model, prompt, settings.temperature, n_tokens)
    counts = torch.zeros([V] * n_tokens, dtype=torch.long)
    first = Generation(target, prompt, replace(settings, max_new_tokens=n_tokens), draft_model)
    first.target.sync(prompt)  # the prompt's cache, copied into every run
    shared = None if first.drafter.stateful else first.drafter
    for i in range(samples):
        run = replace(settings, seed=settings.seed + i, max_new_tokens=n_tokens)
        gen = Generation(target, prompt, run, draft_model, drafter=shared)
        gen.target.copy_from(first.target)
        tokens = gen.run().tokens
        counts[tuple(tokens)] += 1
        if progress:
            progress(i + 1)
    stat, dof, p = chi_square(counts, expected)
    return ExactnessResult(samples, stat, dof, p, tv(counts.double() / samples, expected), counts, expected)
