"""Temperature and sampling, shared by the target and every drafter so both are scaled alike.

Temperature 0 means greedy: the distribution becomes one-hot on the argmax (ties go to the
lowest id, as torch.argmax does) and nothing random is drawn.
"""

from bisect import bisect_left, bisect_right
from functools import lru_cache
from itertools import accumulate

import torch
from torch.nn import functional as F

# Rows wider than this are a real model's (49,152 for SmolLM2): no cached V x V identity for one-hot rows, and
# draw() keeps the row in torch (a Python list of it costs ~2 ms), with the same rule and the same one draw.
LARGE_ROW = 4096


def probs_from_logits(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """softmax(logits / T) in float64, or one-hot argmax at T = 0. (..., V) -> (..., V)"""
    if temperature == 0:
        return one_hot_argmax(logits)  # float32's argmax is float64's: widening is exact
    return F.softmax(logits.double() / temperature, dim=-1)


@lru_cache(maxsize=8)
def _identity(V: int, device: torch.device) -> torch.Tensor:
    return torch.eye(V, dtype=torch.float64, device=device)  # (V, V), never handed out: indexing copies


def one_hot_argmax(x: torch.Tensor) -> torch.Tensor:
    """1.0 at each row's argmax, 0 elsewhere, float64: rows of the identity, gathered. (Not F.one_hot: it
    checks its input's range first; and zeros then scatter_ is one op more, each op slow in a round, after
    the target's pass has emptied the caches: docs/notes/kernels.md.) (..., V) -> (..., V)"""
    V = x.size(-1)
    if V > LARGE_ROW:  # a real model's identity would take V^2 floats (19 GB for SmolLM2): scatter instead
        return torch.zeros(x.shape, dtype=torch.float64, device=x.device).scatter_(-1, x.argmax(-1, keepdim=True), 1.0)
    return _identity(V, x.device)[x.argmax(-1)]


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
    """One token from a distribution: the first whose cumulative probability passes u * total, u a
    uniform draw. A one-hot distribution returns its token without consuming randomness, so
    greedy runs never touch the generator.

    Why in Python: the row is 65 floats. tolist() and a bisection cost ~14 us in a round; the
    exponential race torch.multinomial runs (exponential_, divide, argmax) cost ~20 us there, each
    op paying a dispatch and the caches the target's forward pass has just emptied."""
    if probs.numel() > LARGE_ROW:
        return _draw_large(probs, gen)
    return draw_row(probs.tolist(), gen)


def draw_row(row: list[float], gen: torch.Generator) -> int:
    """draw() from a row already copied to a list."""
    top = max(row)
    if top >= 1.0:  # one-hot
        return row.index(top)
    return draw_cumulative(list(accumulate(row)), gen)


def draw_rows(probs: torch.Tensor, gen: torch.Generator) -> tuple[list[int], list[list[float]] | None]:
    """draw() from each row of probs (S, V), in order, copying them to lists in one call (one dispatch, not S).
    -> (the tokens, the rows as lists, or None for rows too wide to copy: LARGE_ROW)"""
    if probs.size(-1) > LARGE_ROW:
        return [_draw_large(row, gen) for row in probs], None
    rows = probs.tolist()
    return [draw_row(row, gen) for row in rows], rows


def _draw_large(probs: torch.Tensor, gen: torch.Generator) -> int:
    """draw() for a wide row, in torch: cumsum and a binary search."""
    top, arg = probs.max(0)
    if float(top) >= 1.0:  # one-hot
        return int(arg)
    cum = torch.cumsum(probs.double(), 0)
    total = float(cum[-1])
    i = int(torch.searchsorted(cum, torch.tensor([uniform(gen) * total], dtype=cum.dtype), right=True)[0])
    if i == cum.numel():  # u * total rounded up to total: the last token that can occur
        i = int(torch.searchsorted(cum, torch.tensor([total], dtype=cum.dtype))[0])
    return i


def draw_cumulative(cum: list[float], gen: torch.Generator) -> int:
    """draw() from a row's running sums, cum[i] = p_0 + ... + p_i (not one-hot), for a caller that
    keeps them: a drafter that samples from the same rows again and again."""
    total = cum[-1]
    i = bisect_right(cum, uniform(gen) * total)  # skips every p = 0: cum[i - 1] <= u * total < cum[i]
    if i == len(cum):  # u * total rounded up to total: the last token that can occur, where cum first
        i = bisect_left(cum, total)  # reaches the total
    return i


class Stream(torch.Generator):
    """A generation's random stream. It is a torch.Generator, which drafters hand to torch's own
    samplers, and it gives out uniform draws from a buffer refilled BLOCK at a time: one call to
    torch.rand costs ~17 us in a round (the target's pass has just emptied the caches), taking one
    from the buffer well under 1 us, and every round draws at least one. Buffered draws are the
    same independent U(0, 1) draws, each used once, and a seed gives the same stream every time.
    manual_seed and set_state empty the buffer (get_state does not include it)."""

    BLOCK = 256

    def __init__(self):
        super().__init__()
        self._buffer: list[float] = []

    def manual_seed(self, seed: int) -> "Stream":
        self._buffer = []
        return super().manual_seed(seed)

    def set_state(self, state: torch.Tensor) -> "Stream":
        self._buffer = []
        return super().set_state(state)

    def uniform(self) -> float:
        if not self._buffer:
            self._buffer = torch.rand(self.BLOCK, generator=self, dtype=torch.float64).tolist()
            self._buffer.reverse()  # pop() takes them in the order drawn
        return self._buffer.pop()


def uniform(gen: torch.Generator) -> float:
    """A uniform draw in [0, 1): from a Stream's buffer, or one call to any other generator."""
    if isinstance(gen, Stream):
        return gen.uniform()
    return float(torch.rand((), generator=gen, dtype=torch.float64))


def without(q: torch.Tensor, x: int) -> torch.Tensor:
    """q with token x removed and renormalised: what the next sibling of a tree sampled without
    replacement is drawn from. All zeros once nothing is left. (V,)"""
    q = q.clone()
    q[x] = 0.0
    total = float(q.sum())
    return q / total if total > 0 else q
