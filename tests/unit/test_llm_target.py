"""The transformers target (specviz/llm/target.py) on tiny random Llama and GPT-2 models built in the test
(tests/llm_models.py): tree attention through the 4D mask, the DynamicCache after keep and trim, and the
engine on them: greedy output in float64 equal to plain greedy and to transformers' own generate, the cache
equal to a fresh prefill after every round, and the sampled output's distribution equal to the target's."""

import pytest
import torch

from specviz.core.engine import Generation
from specviz.core.settings import Settings
from specviz.drafters import drafter_class, drafter_names, make_drafter
from specviz.drafters.base import Sources, tree_mask
from specviz.teaching.exactness import chi_square
from tests.llm_models import checkpoint

KINDS = ("llama", "gpt2")
PROMPT = "ROMEO:\nBut soft, what light through yonder window breaks? But soft, what"


def draft_model(kind: str, drafter: str, **kw):
    """The other tiny architecture (same tokenizer) as the draft model of a drafter that needs one, else None."""
    if "draft_model" not in drafter_class(drafter).needs:
        return None
    return checkpoint("gpt2" if kind == "llama" else "llama", **kw).model


def fresh(ck, tokens: list[int]) -> torch.Tensor:
    """Logits of a from-scratch pass (no cache, causal) over tokens. (T, V)"""
    with torch.no_grad():
        return ck.model(torch.tensor([tokens])).logits[0]


def fresh_cache(ck, tokens: list[int]) -> list[tuple[torch.Tensor, torch.Tensor]]:
    from transformers import DynamicCache

    cache = DynamicCache(config=ck.model.config)
    with torch.no_grad():
        ck.model(torch.tensor([tokens]), past_key_values=cache, use_cache=True)
    return [(layer.keys, layer.values) for layer in cache.layers]


def assert_cache_is_prefill(ck, target, context: list[int]) -> None:
    held = context[target.start : target.start + target.length]
    assert held == context[target.start : -1], "the cache holds the context minus its last token"
    want = fresh_cache(ck, held)
    for layer, (k, v) in zip(target.cache.layers, want, strict=True):
        torch.testing.assert_close(layer.keys, k, rtol=0, atol=1e-10)
        torch.testing.assert_close(layer.values, v, rtol=0, atol=1e-10)


@pytest.mark.parametrize("kind", KINDS)
def test_tree_rows_equal_fresh_passes_and_keep_gathers_the_path(kind):
    ck = checkpoint(kind)
    ctx = ck.tokenizer.encode(PROMPT)
    t = ck.target_model()
    t.sync(ctx)
    assert t.length == len(ctx) - 1
    parents = [-1, 0, 0, -1, 3, 4]  # two branches under the root, one three deep
    nodes = [5, 9, 11, 20, 31, 7]
    depths = [1, 2, 2, 1, 2, 3]
    P = t.length
    logits = t.forward([ctx[-1], *nodes], [P] + [P + d for d in depths], tree_mask(parents))
    for i in range(len(nodes) + 1):  # row i: the root (0) or node i - 1, after its ancestors only
        path, j = [], i - 1
        while j >= 0:
            path.insert(0, nodes[j])
            j = parents[j]
        torch.testing.assert_close(logits[i], fresh(ck, ctx + path)[-1], rtol=0, atol=1e-10)
    t.keep([0, 4, 5, 6], [ctx[-1], 20, 31, 7])  # the root and the deep branch
    assert_cache_is_prefill(ck, t, ctx + [20, 31, 7, 1])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("drafter", drafter_names(bpe=True))
def test_greedy_float64_equals_plain_decoding_and_transformers_generate(kind, drafter):
    ck = checkpoint(kind)
    prompt, n = ck.tokenizer.encode(PROMPT), 48
    gen = Generation(ck, prompt, Settings(drafter=drafter, k=4, temperature=0.0, max_new_tokens=n, layer_skip_layers=1),
                     draft_model(kind, drafter))  # fmt: skip
    while not gen.done:
        gen.step()
        assert_cache_is_prefill(ck, gen.target, gen.tokens)
    with torch.no_grad():
        want = ck.model.generate(torch.tensor([prompt]), do_sample=False, max_new_tokens=n, min_new_tokens=n,
                                 pad_token_id=0)[0, len(prompt) :].tolist()  # fmt: skip
    assert gen.trace.tokens == want
    plain = Generation(ck, prompt, Settings(drafter="none", temperature=0.0, max_new_tokens=n)).run()
    assert plain.tokens == want
    if drafter in ("prompt-lookup", "suffix"):  # random draft models rarely agree with the target: not asked
        assert len(gen.trace.rounds) < n, "the drafter never had a draft accepted: the test checks nothing of it"


def exact_two(ck, prompt: list[int]) -> torch.Tensor:
    """The target's exact joint distribution of the next two tokens at T = 1, by enumeration. (V, V)"""
    p1 = torch.softmax(fresh(ck, prompt)[-1], -1)  # (V,)
    V = p1.numel()
    with torch.no_grad():
        rows = ck.model(torch.tensor([prompt + [x] for x in range(V)])).logits[:, -1]  # (V, V)
    return p1[:, None] * torch.softmax(rows, -1)


# Every drafter on Llama; on GPT-2 the tree drafters only. What differs by architecture (the cache, its trim and
# keep, the tree's 4D mask) is checked exactly above for both; what sampling adds (draws, residuals, a tree's
# siblings) does not depend on it, and a tree round is where the two targets' masks and gathers meet it.
SAMPLED = [("llama", d) for d in drafter_names(bpe=True, drafts=True)] + [
    ("gpt2", d) for d in drafter_names(bpe=True, drafts=True, tree=True)
]


@pytest.mark.slow  # 2,500 runs a case
@pytest.mark.parametrize("kind,drafter", SAMPLED)
def test_sampled_output_has_the_targets_distribution(kind, drafter):
    """Runs of two tokens at T = 1 (the second one drafted whenever the drafter drafts) against the target's
    enumerated joint distribution, on a peaky model so that the test has power."""
    ck = checkpoint(kind, scale=1.0)
    prompt = ck.tokenizer.encode("the cat sat on the mat. the cat sat on the mat. the cat ")
    expected = exact_two(ck, prompt)
    settings = Settings(drafter=drafter, k=1, temperature=1.0, max_new_tokens=2, layer_skip_layers=1)
    counts, drafted = torch.zeros_like(expected), 0
    draft = draft_model(kind, drafter, scale=1.0)
    shared = make_drafter(Sources(settings, ck, prompt, ck.target_model(), draft))
    for seed in range(2500):
        run = Generation(ck, prompt, Settings(**{**vars(settings), "seed": seed}), draft,
                         drafter=None if shared.stateful else shared)  # fmt: skip
        trace = run.run()
        a, b = trace.tokens[:2]
        counts[a, b] += 1
        drafted += sum(len(r.draft_tokens) for r in trace.rounds)
    assert drafted > 1000, "too few drafts: the test would not cover the drafted position"
    test = chi_square(counts, expected)
    assert test.dof >= 10 and test.p_value > 1e-3, test


def test_a_wide_row_draws_what_the_list_path_draws():
    """draw() keeps a real model's row in torch (sampling.LARGE_ROW): the same token as the running sums."""
    from itertools import accumulate

    from specviz.core.sampling import LARGE_ROW, Stream, draw, draw_cumulative

    probs = torch.softmax(torch.randn(LARGE_ROW + 1000, generator=torch.Generator().manual_seed(0)) * 3, 0).double()
    a, b = Stream().manual_seed(1), Stream().manual_seed(1)
    cum = list(accumulate(probs.tolist()))
    got = [draw(probs, a) for _ in range(300)]
    assert got == [draw_cumulative(cum, b) for _ in range(300)] and len(set(got)) > 50
