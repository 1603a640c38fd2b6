"""The model's KV cache and tree attention against plain full forward passes, in float64."""

import pytest
import torch

from models.gpt import GPT, GPTConfig, KVCache, PositionError, state_shapes

TOL = 1e-9


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    m = GPT(GPTConfig(block_size=32, vocab_size=11, n_layer=2, n_head=2, n_embd=16)).double().eval()
    # Random init is too tame to catch mistakes (near-uniform attention): spread the weights.
    with torch.no_grad():
        for p in m.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    return m


def full_logits(model, ids):
    logits, _ = model(torch.tensor([ids]), torch.arange(len(ids)))
    return logits[0]  # (T, V)


@torch.no_grad()
def test_cache_prefill_then_single_then_chunk_equals_full_forward(model):
    ids = torch.randint(11, (20,), generator=torch.Generator().manual_seed(1)).tolist()
    full = full_logits(model, ids)
    logits, cache = model(torch.tensor([ids[:7]]), torch.arange(7))  # prefill
    got = [logits[0]]
    for t in range(7, 12):  # one token at a time
        logits, cache = model(torch.tensor([[ids[t]]]), torch.tensor([t]), cache)
        got.append(logits[0])
    logits, cache = model(torch.tensor([ids[12:]]), torch.arange(12, 20), cache)  # several at once
    got.append(logits[0])
    assert cache.length == 20
    assert (torch.cat(got) - full).abs().max().item() < TOL


@torch.no_grad()
def test_tree_attention_equals_each_root_to_leaf_path(model):
    # Tree after a 5-token context, branching at depth 0 and at depth 1:
    #   node 0 (a) ─ node 2 (c) ─ node 5 (f)
    #             └ node 3 (d)
    #   node 1 (b) ─ node 4 (e)
    context = [3, 1, 4, 1, 5]
    tokens = [2, 7, 6, 9, 8, 10]
    parents = [-1, -1, 0, 0, 1, 2]
    depth = [0, 0, 1, 1, 1, 2]
    P, N = len(context), len(tokens)
    mask = torch.zeros(N, P + N, dtype=torch.bool)
    mask[:, :P] = True
    for i in range(N):
        j = i
        while j != -1:  # the node, then its ancestors
            mask[i, P + j] = True
            j = parents[j]
    _, cache = model(torch.tensor([context]), torch.arange(P))
    pos = torch.tensor([P + d for d in depth])
    tree_logits, tree_cache = model(torch.tensor([tokens]), pos, cache, attn_mask=mask)
    for leaf in (3, 4, 5):
        path = []
        j = leaf
        while j != -1:
            path.insert(0, j)
            j = parents[j]
        full = full_logits(model, context + [tokens[j] for j in path])
        assert (tree_logits[0, path] - full[P:]).abs().max().item() < TOL
        # The gathered cache of the path is the cache of a fresh prefill of that path.
        _, fresh = model(torch.tensor([context + [tokens[j] for j in path]]), torch.arange(P + len(path)))
        gathered = tree_cache.gather(list(range(P)) + [P + j for j in path])
        assert_caches_equal(gathered, fresh)


def assert_caches_equal(a: KVCache, b: KVCache):
    assert a.length == b.length
    for (ka, va), (kb, vb) in zip(a.layers, b.layers, strict=True):
        assert (ka - kb).abs().max().item() < TOL
        assert (va - vb).abs().max().item() < TOL


@torch.no_grad()
def test_trimmed_cache_equals_fresh_prefill(model):
    ids = [1, 2, 3, 4, 5, 6, 7, 8, 9]
    _, cache = model(torch.tensor([ids]), torch.arange(len(ids)))
    _, fresh = model(torch.tensor([ids[:5]]), torch.arange(5))
    assert_caches_equal(cache.trim(5), fresh)
    # and a trimmed cache keeps working: continuing it equals the full forward
    logits, _ = model(torch.tensor([ids[5:]]), torch.arange(5, 9), cache.trim(5))
    assert (logits[0] - full_logits(model, ids)[5:]).abs().max().item() < TOL


def test_cache_trim_and_gather_reject_bad_arguments(model):
    _, cache = model(torch.tensor([[1, 2, 3]]), torch.arange(3))
    with pytest.raises(ValueError):
        cache.trim(4)
    with pytest.raises(ValueError):
        cache.gather([0, 3])


def test_position_beyond_block_size_is_an_error(model):
    with pytest.raises(PositionError, match="position 32 .*block_size 32"):
        model(torch.tensor([[1, 2]]), torch.tensor([31, 32]))
    logits, _ = model(torch.tensor([[1]]), torch.tensor([31]))  # the last valid position works
    assert logits.shape == (1, 1, 11)


def test_float32_matches_float64(model):
    m32 = GPT(model.config)
    m32.load_state_dict({k: v.float() for k, v in model.state_dict().items()})
    ids = [1, 5, 2, 8, 3]
    diff = (m32(torch.tensor([ids]), torch.arange(5))[0].double() - full_logits(model, ids)).abs().max()
    assert diff.item() < 1e-4


def test_gpt2_layer_names_and_tied_head(model):
    names = set(model.state_dict())
    for n in ["transformer.wte.weight", "transformer.wpe.weight", "transformer.h.0.ln_1.weight",
              "transformer.h.0.attn.c_attn.weight", "transformer.h.0.attn.c_attn.bias",
              "transformer.h.0.attn.c_proj.weight", "transformer.h.0.ln_2.bias",
              "transformer.h.1.mlp.c_fc.weight", "transformer.h.1.mlp.c_proj.bias",
              "transformer.ln_f.weight", "lm_head.weight"]:  # fmt: skip
        assert n in names
    assert model.lm_head.weight is model.transformer.wte.weight


@pytest.mark.parametrize("config", [GPTConfig(), GPTConfig(block_size=8, vocab_size=5, n_layer=3, n_head=3, n_embd=12)])
def test_state_shapes_are_a_built_models(config):
    """The loader checks a checkpoint's tensors against state_shapes before building anything."""
    assert state_shapes(config) == {k: tuple(v.shape) for k, v in GPT(config).state_dict().items()}
