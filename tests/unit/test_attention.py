"""The attention kernel (specviz/kernels/attention.py, attention.cpp) computes what torch computes, within
rounding, for every mask a pass sends; a row's output depends only on its query and the entries it
sees, bit for bit, in a chain or a tree; and where the kernel cannot run, torch does."""

import pytest
import torch

from specviz.drafters.base import tree_mask
from specviz.kernels import native
from specviz.kernels.attention import HEAD_SIZES, attend, attend_torch, attn_bias

TOL = {torch.float32: 2e-6, torch.float64: 1e-14}  # softmax-weighted averages of O(1) values
ROWS = 40  # more rows than a verify pass sends: the kernel's loop orders for few rows and for many
NH, CAPACITY = 4, 176  # room for a re-prefill of 133 rows after 40 entries


def cache(hs: int, dtype: torch.dtype, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(NH, CAPACITY, hs, generator=g, dtype=dtype) for _ in range(2))


def rows(T: int, hs: int, dtype: torch.dtype, seed: int = 1) -> torch.Tensor:
    """T rows of [q | k | v], (T, 3 * NH * hs)."""
    return torch.randn(T, 3 * NH * hs, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def random_tree(T: int, seed: int) -> list[int]:
    """Parents of T - 1 nodes after a root (-1: the root's child); each node's parent comes before it."""
    g = torch.Generator().manual_seed(seed)
    return [int(torch.randint(-1, i, (1,), generator=g)) if i else -1 for i in range(T - 1)]


def run(fn, qkv, kv, P, bias, nh=NH):
    K, V = (t.clone() for t in kv)
    y = fn(qkv, K, V, P, bias, nh)
    return y, K, V


def needs_kernel():
    if native.kernel() is None:
        pytest.skip(native.backend())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("hs", [64, 16, 32, 128])  # every size it is built for: narrow and wide vectors (vec.h)
def test_kernel_matches_torch(dtype, hs):
    needs_kernel()
    kv = cache(hs, dtype)
    for T in [*range(1, 10), 17, ROWS, 133]:  # 133: a re-prefill's rows, which the kernel takes too
        for P in (0, 5, 40):
            qkv = rows(T, hs, dtype, seed=T + P)
            tree = tree_mask(random_tree(T, seed=T))  # (T, T) over the root and its nodes
            for bias in (None, attn_bias(P, tree, dtype)):
                got, K1, V1 = run(attend, qkv, kv, P, bias)
                want, K2, V2 = run(attend_torch, qkv, kv, P, bias)
                assert got.shape == want.shape == (T, NH * hs)
                assert float((got - want).abs().max()) < TOL[dtype], (T, P, bias is None)
                assert torch.equal(K1, K2) and torch.equal(V1, V2), "the new keys and values are written as they are"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_a_chain_row_is_its_one_token_row_bit_for_bit(dtype):
    """Row i of a verify pass over a chain sees what the one-token pass of the same token sees, in the
    same order: the same bits, at every N the kernel takes (both of its loop orders)."""
    needs_kernel()
    kv, qkv, P = cache(64, dtype), rows(ROWS, 64, dtype), 30
    K, V = (t.clone() for t in kv)
    alone = torch.cat([attend(qkv[i : i + 1], K, V, P + i, None, NH) for i in range(ROWS)])
    for N in range(2, ROWS + 1):
        got, _, _ = run(attend, qkv[:N].contiguous(), kv, P, None)
        assert torch.equal(got, alone[:N]), N


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_a_tree_row_is_its_path_alone_bit_for_bit(dtype):
    """A node of a tree sees the cache and its ancestors, scattered among its siblings' entries; it
    rounds exactly as the last of one-token passes along its path, written one after another."""
    needs_kernel()
    kv, P = cache(64, dtype), 20
    for T in (4, 9, 17):
        parents = random_tree(T, seed=100 + T)
        qkv = rows(T, 64, dtype, seed=T)
        tree, _, _ = run(attend, qkv, kv, P, attn_bias(P, tree_mask(parents), dtype))
        for node in range(T):
            path = [node]
            while path[-1]:  # index 0 is the root; node i + 1's parent is parents[i] + 1
                path.append(parents[path[-1] - 1] + 1)
            K, V = (t.clone() for t in kv)
            for d, i in enumerate(reversed(path)):
                y = attend(qkv[i : i + 1], K, V, P + d, None, NH)
            assert torch.equal(y[0], tree[node]), (T, node)


def test_what_it_is_not_built_for_goes_to_torch():
    dtype = torch.float32
    kv, qkv = cache(8, dtype), rows(3, 8, dtype)  # a head size of 8: not in HEAD_SIZES
    assert 8 not in HEAD_SIZES
    assert torch.equal(run(attend, qkv, kv, 5, None)[0], run(attend_torch, qkv, kv, 5, None)[0])
    kv, qkv = cache(64, dtype), rows(3, 64, dtype)
    wrong = torch.zeros(3, 7, dtype=dtype)  # a mask of the wrong width: torch says so, never a read past it
    with pytest.raises(RuntimeError):
        run(attend, qkv, kv, 5, wrong)


def test_switched_off(monkeypatch):
    native._build.cache_clear()
    monkeypatch.setenv("SPECVIZ_KERNEL", "0")
    try:
        kv, qkv = cache(64, torch.float32), rows(5, 64, torch.float32)
        assert torch.equal(run(attend, qkv, kv, 9, None)[0], run(attend_torch, qkv, kv, 9, None)[0])
    finally:
        monkeypatch.undo()
        native._build.cache_clear()
