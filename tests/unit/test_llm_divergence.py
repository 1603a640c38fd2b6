"""Greedy divergence (issue 42): where a speculative run first departed from plain decoding, and the logit
margin there; in float64 a greedy speculative run never departs."""

import pytest
import torch

from specviz.core.engine import Generation
from specviz.core.settings import Settings
from specviz.llm.divergence import first_departure, fresh_logits, plain_greedy
from tests.llm_models import checkpoint

PROMPT = "First Citizen:\nBefore we proceed any further, hear me speak.\n"


@pytest.mark.parametrize("drafter", ["prompt-lookup", "bigram"])
def test_float64_greedy_never_departs_from_plain_decoding(drafter):
    ck = checkpoint("llama", torch.float64)
    prompt = ck.tokenizer.encode(PROMPT)
    run = Generation(ck, prompt, Settings(drafter=drafter, k=4, temperature=0.0, max_new_tokens=24)).run()
    assert first_departure(ck, prompt, run.tokens) is None
    assert run.tokens == plain_greedy(ck, prompt, 24)


def test_a_departure_is_found_where_it_is_with_the_margin_of_a_fresh_pass():
    ck = checkpoint("llama", torch.float64)
    prompt = ck.tokenizer.encode(PROMPT)
    plain = plain_greedy(ck, prompt, 12)
    logits = fresh_logits(ck, prompt + plain[:5])
    second = int(torch.topk(logits, 2).indices[1])  # the runner-up where plain decoding took its argmax
    assert second != plain[5]
    tokens = plain[:5] + [second] + plain[6:]  # a run that took the runner-up at token 5
    d = first_departure(ck, prompt, tokens, plain)
    assert d is not None and (d.index, d.speculative, d.plain, d.dtype) == (5, second, plain[5], "float64")
    assert d.margin == pytest.approx(float(logits[plain[5]] - logits[second]), abs=1e-12) and d.margin > 0
    assert first_departure(ck, prompt, plain, plain) is None
