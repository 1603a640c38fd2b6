"""The lean forward (specviz.kernels.cached_model) computes what the reference GPT computes: logits within
1e-10 in float64, and in float32 within 1e-5 of the logits' scale (the two use different matmul
kernels, which sum in different orders), the same greedy text past block_size, the same KV cache."""

import pytest
import torch
from conftest import assert_plain_greedy

from models.checkpoint import load_checkpoint
from models.gpt import PositionError
from specviz.core.engine import Generation
from specviz.core.settings import Settings
from specviz.drafters.base import tree_mask
from specviz.kernels import native
from specviz.kernels.attention import attn_bias, causal_bias
from specviz.kernels.cached_model import CachedModel, lean_block, lean_weights

TEXT = "ROMEO:\nBut soft, what light through yonder window breaks?\nIt is the east, and Juliet is the sun.\n"
TOL = {torch.float64: 1e-10, torch.float32: 1e-5}


def close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal within the dtype's tolerance: absolute in float64, relative to the largest value in float32."""
    scale = 1.0 if a.dtype == torch.float64 else max(1.0, float(b.abs().max()))
    return float((a - b).abs().max()) < TOL[a.dtype] * scale


@pytest.fixture(scope="module", params=[torch.float64, torch.float32], ids=["float64", "float32"])
def ckpt(request):
    return load_checkpoint("target", dtype=request.param)


def reference(ckpt, tokens, positions, past=None, mask=None):
    with torch.no_grad():
        logits, cache = ckpt.model(torch.tensor([tokens]), torch.tensor(positions), past, mask)
    return logits[0], cache


def test_prefill_then_one_token_then_a_chain(ckpt):
    ids = ckpt.tokenizer.encode(TEXT)
    lean = CachedModel(ckpt.model)
    lean.sync(ids)  # prefill ids[:-1]
    ref_logits, past = reference(ckpt, ids[:-1], list(range(len(ids) - 1)))
    for (k1, v1), (k2, v2) in zip(lean.kv_cache(), past.layers, strict=True):
        assert close(k1, k2) and close(v1, v2)
    P = lean.length
    one = lean.forward(ids[-1:], [P])  # (1, V)
    assert close(one, reference(ckpt, ids[-1:], [P], past)[0])
    chain = [ids[-1], 5, 17, 42, 1]
    got = lean.forward(chain, list(range(P, P + 5)))  # (5, V): causal among the new tokens
    assert close(got, reference(ckpt, chain, list(range(P, P + 5)), past)[0])


@pytest.mark.parametrize("masked", [False, True], ids=["causal", "bias"])
def test_keys_only_rows_write_the_same_cache_and_leave_the_rest_unchanged(ckpt, masked):
    """lean_block(keys_only=j): the first j rows write their keys and values, and the rows after come out bit for
    bit as in the whole block (a head's entries before its root: specviz/drafters/dflash.py, eagle.py)."""
    torch.manual_seed(0)
    lean = lean_weights(ckpt.model)
    w, C, nh, dtype = lean.layers[0], ckpt.config.n_embd, ckpt.config.n_head, lean.wte.dtype
    P, T = 5, 7
    x = torch.randn(T, C, dtype=dtype)
    new = torch.ones(T, T, dtype=torch.bool).tril()
    new[4:, 4:] = True  # the last 3 rows see each other, as a block's mask rows do
    bias = attn_bias(P, new, dtype) if masked else None
    caches = []
    for j in (0, 3, 6):
        K, V = (torch.randn(nh, 16, C // nh, dtype=dtype) for _ in range(2))
        K[:, :P], V[:, :P] = torch.ones(nh, P, C // nh), torch.zeros(nh, P, C // nh)  # the same past for every j
        caches.append((lean_block(x, w, K, V, P, bias, nh, keys_only=j), K[:, : P + T], V[:, : P + T]))
    (whole, K0, V0), *rest = caches
    for j, (h, K, V) in zip((3, 6), rest, strict=True):
        assert h.shape == (T - j, C) and torch.equal(h, whole[j:]), j
        assert torch.equal(K, K0) and torch.equal(V, V0), j


def test_a_chains_bias_view_is_the_causal_mask_it_stands_for():
    for dtype in (torch.float32, torch.float64):
        for P, T in ((1, 2), (7, 5), (300, 33), (2000, 100), (3, 5)):  # the last two grow the band, then reuse it
            view = causal_bias(P, T, dtype)
            assert torch.equal(view, attn_bias(P, torch.ones(T, T, dtype=torch.bool).tril(), dtype))


def test_tree_attention_matches_the_reference_mask(ckpt):
    ids = ckpt.tokenizer.encode(TEXT)
    lean = CachedModel(ckpt.model)
    lean.sync(ids)
    _, past = reference(ckpt, ids[:-1], list(range(len(ids) - 1)))
    parents = [-1, 0, 0, -1, 3, 4]  # two branches from the root, one of them three deep
    tree = tree_mask(parents)  # (7, 7)
    depths = [1, 2, 2, 1, 2, 3]
    P = lean.length
    tokens, positions = [ids[-1], 3, 8, 9, 20, 21, 22], [P] + [P + d for d in depths]
    mask = torch.cat([torch.ones(7, P, dtype=torch.bool), tree], dim=1)
    want = reference(ckpt, tokens, positions, past, mask)[0]
    assert close(lean.forward(tokens, positions, tree), want)
    # keep the path root -> node 3 -> node 4: the cache then equals a prefill of that sequence
    lean.keep([0, 4, 5], [tokens[0], tokens[4], tokens[5]])
    seq = ids[:-1] + [tokens[0], tokens[4], tokens[5]]
    _, fresh = reference(ckpt, seq, list(range(len(seq))))
    for (k1, v1), (k2, v2) in zip(lean.kv_cache(), fresh.layers, strict=True):
        assert close(k1, k2) and close(v1, v2)


def test_a_verify_pass_rounds_as_one_token_passes_do(ckpt):
    """Bit for bit: each row of a pass over a chain, or over a tree, gives the logits that plain
    decoding's one-token passes give for the same token after the same context. Every step of a row
    is row by row (the products, attention, lm_head: specviz/kernels/linear.py, specviz/kernels/attention.py), so
    speculation cannot change a greedy choice by rounding, not even at a near tie."""
    if native.kernel() is None:
        pytest.skip(native.backend())
    ids = ckpt.tokenizer.encode(TEXT)
    P, drafts = 40, ids[41:53]  # a chain: the text's own next 12 tokens
    verify = CachedModel(ckpt.model)
    verify.sync(ids[: P + 1])
    chain = verify.forward([ids[P], *drafts], list(range(P, P + 13)))  # (13, V)
    plain = CachedModel(ckpt.model)
    plain.sync(ids[: P + 1])
    alone = []
    for i, token in enumerate([ids[P], *drafts]):
        alone.append(plain.forward([token], [P + i]))
        plain.keep([0], [token])
    assert torch.equal(chain, torch.cat(alone))
    parents = [-1, -1, 0, 0, 1, 2, 4]  # a tree whose paths interleave in the pass
    tokens = [ids[P], 7, 9, 11, 13, 15, 17, 19]
    depths = [0, 1, 1, 2, 2, 2, 3, 3]
    tree = verify.forward(tokens, [P + d for d in depths], tree_mask(parents))  # (8, V)
    for node in range(1, 8):
        path = [node]
        while path[-1]:
            path.append(parents[path[-1] - 1] + 1)
        plain.sync(ids[: P + 1])  # back to the cache before the root
        for d, i in enumerate(reversed(path)):
            row = plain.forward([tokens[i]], [P + d])
            plain.keep([0], [tokens[i]])
        assert torch.equal(row[0], tree[node]), node


def test_greedy_text_equals_the_reference_past_block_size(ckpt):
    """300 greedy tokens from the engine (lean path) against the reference module with no cache."""
    prompt = ckpt.tokenizer.encode(TEXT)
    run = Generation(ckpt, prompt, Settings(drafter="none", temperature=0, max_new_tokens=300)).run()
    assert len(prompt) + len(run.tokens) > ckpt.config.block_size + 100
    assert assert_plain_greedy(ckpt, prompt, run.tokens) >= 2


def test_positions_outside_the_window_are_refused(ckpt):
    lean = CachedModel(ckpt.model)
    with pytest.raises(PositionError):
        lean.forward([1], [ckpt.config.block_size])


def test_the_cache_grows_for_a_tree_wider_than_its_spare_room(ckpt):
    lean = CachedModel(ckpt.model)
    ids = ckpt.tokenizer.encode(TEXT * 3)[:255]
    lean.sync(ids)
    spare = lean.capacity - lean.length
    n = spare + 10  # a flat tree of n children: more entries than the preallocated room
    tree = tree_mask([-1] * n)
    lean.forward([ids[-1]] + [1] * n, [lean.length] + [lean.length + 1] * n, tree, logits=False)
    assert lean.capacity >= 255 + n


def test_lean_weights_are_copied_once_and_renewed_when_the_model_changes():
    ckpt = load_checkpoint("tiny")
    w = lean_weights(ckpt.model)
    assert lean_weights(ckpt.model) is w  # shared by every generation on this model
    with torch.no_grad():
        ckpt.model.lm_head.weight.mul_(2.0)  # training, say: parameters change in place
    assert lean_weights(ckpt.model) is not w


def test_extend_grows_a_tree_depth_by_depth(tiny64):
    """The draft tree's passes (neural-tree): the context's missing tokens, then each depth appended
    after the scratch with a (T, S+T) mask. Every node's logits equal a fresh forward of its
    root-to-node path, and keeping a path across passes equals a prefill of it."""
    ids = tiny64.tokenizer.encode(TEXT)
    lean = CachedModel(tiny64.model)
    lean.sync(ids[:-2])  # committed: ids[:-3]; the drafter feeds the rest with its first pass
    P, missing = lean.length, ids[-3:]
    root = lean.forward(missing, [P, P + 1, P + 2])[-1]  # (V,) scratch: 3 entries, causal
    depth1 = [5, 9]  # two children of the root
    m1 = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 0, 1]], dtype=torch.bool)  # (2, 3+2)
    got1 = lean.extend(depth1, [P + 3] * 2, m1)  # (2, V)
    depth2, parent2 = [17, 42, 1], [0, 0, 1]  # two children of 5, one of 9
    m2 = torch.zeros(3, 8, dtype=torch.bool)  # (3, 5+3)
    m2[:, :3] = True
    for i, par in enumerate(parent2):
        m2[i, 3 + par] = m2[i, 5 + i] = True
    got2 = lean.extend(depth2, [P + 4] * 3, m2)  # (3, V)

    def fresh(path):  # logits after ids + path, no cache
        seq = ids + path
        return reference(tiny64, seq, list(range(len(seq))))[0][-1]

    assert close(root, fresh([]))
    for i, t in enumerate(depth1):
        assert close(got1[i], fresh([t]))
    for i, (t, par) in enumerate(zip(depth2, parent2, strict=True)):
        assert close(got2[i], fresh([depth1[par], t]))
    lean.keep([0, 1, 2, 4, 7], missing + [9, 1])  # the context, then 9 -> 1 (scratch indices 3 + 1, 5 + 2)
    seq = ids + [9, 1]
    _, want = reference(tiny64, seq, list(range(len(seq))))
    for (k1, v1), (k2, v2) in zip(lean.kv_cache(), want.layers, strict=True):
        assert close(k1, k2) and close(v1, v2)
    with pytest.raises(AssertionError, match="covers the scratch"):
        lean.extend([3], [P + 5], torch.ones(1, 2, dtype=torch.bool))  # keep emptied the scratch: (1, 0+1) wanted


@torch.no_grad()
def test_captured_features_equal_the_reference_after_a_tree_keep(ckpt):
    """The features a draft head reads (EAGLE, Medusa) are the reference model's residual stream,
    and a kept tree path leaves them as a fresh prefill of that sequence would."""
    ids = ckpt.tokenizer.encode(TEXT)
    layers = (0, 1, 3)
    lean = CachedModel(ckpt.model)
    lean.capture(layers)
    lean.sync(ids)
    P = lean.length
    assert close(lean.features(0, P), ckpt.model.features(torch.tensor([ids[:-1]]), layers)[:, 0])
    parents, depths = [-1, 0, -1, 2], [1, 2, 1, 2]
    tokens = [ids[-1], 3, 8, 9, 20]
    lean.forward(tokens, [P] + [P + d for d in depths], tree_mask(parents))
    lean.keep([0, 3, 4], [tokens[0], tokens[3], tokens[4]])
    seq = ids[:-1] + [tokens[0], tokens[3], tokens[4]]
    fresh = ckpt.model.features(torch.tensor([seq]), layers)[:, 0]  # (3, T, C)
    assert lean.length == len(seq) and close(lean.features(0, lean.length), fresh)
    lean.reserve(3 * lean.capacity)  # growing the buffers keeps the features
    assert close(lean.features(0, lean.length), fresh)
