"""Where a greedy speculative run first departed from plain greedy decoding, and how near a tie it was there.

Greedy speculative decoding keeps exactly the target's argmax at every position, so its text equals plain
decoding's whenever the target's logits are the same in both. In float32 they need not be: a verify pass over
N rows sums its products in another order than N one-row passes, and a near-tie between the two best tokens
can flip. In float64 the rounding is ~1e-16 and no such tie flips (tests/unit/test_llm_target.py).
"""

from dataclasses import dataclass

import torch

from specviz.core.engine import Generation
from specviz.core.settings import Settings
from specviz.drafters import BASELINE


@dataclass
class Departure:
    """The first token where the speculative text differs from plain decoding's."""

    index: int  # generated token index (0 = the first new token)
    speculative: int  # the token the speculative run emitted there
    plain: int  # the token plain decoding emitted there
    margin: float  # plain's logit minus the speculative token's, in a fresh pass over the context (>= 0)
    dtype: str  # the model's dtype, in which the margin was computed


def plain_greedy(checkpoint, prompt: list[int], n: int) -> list[int]:
    """Our plain greedy decoding of ``n`` tokens (one pass per token, the same target and cache)."""
    return Generation(checkpoint, prompt, Settings(drafter=BASELINE, temperature=0.0, max_new_tokens=n)).run().tokens


def fresh_logits(checkpoint, context: list[int]) -> torch.Tensor:
    """The last row of logits of one pass over the whole ``context``, no cache. -> (V,)"""
    model = checkpoint.model
    with torch.no_grad():
        return model(torch.tensor([context], device=model.device)).logits[0, -1]


def first_departure(
    checkpoint, prompt: list[int], tokens: list[int], plain: list[int] | None = None
) -> Departure | None:
    """Compare a greedy run's ``tokens`` with plain decoding's (computed here unless given); None where equal."""
    plain = plain_greedy(checkpoint, prompt, len(tokens)) if plain is None else plain
    i = next((i for i, (a, b) in enumerate(zip(tokens, plain, strict=False)) if a != b), None)
    if i is None:
        return None
    logits = fresh_logits(checkpoint, prompt + tokens[:i])
    margin = float(logits[plain[i]] - logits[tokens[i]])
    return Departure(i, tokens[i], plain[i], margin, str(logits.dtype).removeprefix("torch."))
