"""The lean pass's attention: a pass's new rows write their keys and values into the preallocated cache
and attend to the entries they may see, on specviz/kernels/attention.cpp's kernel, or on torch where it is not
built (specviz/kernels/native.py).

Why a kernel of our own? torch spends far more on dispatch and MKL's set-up for these tiny shapes (4 heads
of 64 over ~200 cache entries) than on their few microseconds of arithmetic, four layers a pass. The kernel
does a layer's attention in one call. Plain decoding gains the most, so v(N), a pass over N tokens in
one-token passes, went up: the less a one-token pass wastes, the less a verify pass can share.

A chain's and a prefill's rows (causal: no mask) skip the scores and the weighted terms of the entries
they cannot see, which half a prefill's attention computed only to discard; what a row sees, and so its
bits, is unchanged. Measurements: docs/notes/kernels.md.

And a correctness gain: a row's output depends only on its query and the entries it sees, summed in
cache order (attention.cpp), so a token's row in a verify pass, chain or tree, is bit for bit its row
in a one-token pass (tests/unit/test_attention.py; through the whole pass, tests/unit/test_cached_model.py).
torch's masked batched product and softmax run over the whole padded row in blocks, and the pass's
logits differed from the one-token passes' by up to 5e-6.
"""

import math

import torch
from torch.nn import functional as F

from specviz.kernels.native import kernel

_SYMBOLS = {torch.float32: "attend_f32", torch.float64: "attend_f64"}
HEAD_SIZES = (16, 32, 64, 128)  # what attention.cpp is built for (a head in registers)


def attn_bias(P: int, new: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The additive attention mask of a pass whose rows see the first P cache entries and, among the
    rest, where ``new`` (T, S+T) bool is True: 0 there, -inf elsewhere. Built once per pass: the
    kernel reads it as which entries each row sees; torch's path adds it inside the score matmul
    (baddbmm), the same scores as masked_fill on each layer's (q @ k^T) * scale, bit for bit, in
    fewer ops. -> (T, P+S+T)"""
    bias = torch.zeros(new.size(0), P + new.size(1), dtype=dtype)
    bias[:, P:].masked_fill_(~new, float("-inf"))
    return bias


_BANDS: dict[torch.dtype, torch.Tensor] = {}  # per dtype: band[i, j] = -inf iff j > i + D, else 0


def causal_bias(P: int, T: int, dtype: torch.dtype) -> torch.Tensor:
    """attn_bias(P, causal (T, T)), a chain's mask, as a view of one band built once per dtype, for
    torch's path (the kernel needs no mask for a chain; building one cost ~25 us a pass in a round). Column c
    of the view is column c + D - P of the band, -inf iff c > i + P: row i sees the cache and
    the new tokens up to itself. Never written. -> (T, P+T) view"""
    band = _BANDS.get(dtype)
    rows = 0 if band is None else band.size(0)
    D = 0 if band is None else band.size(1) - rows
    if rows < T or D < P:
        rows, D = max(T, 64), max(P, 1024)
        band = torch.zeros(rows, D + rows, dtype=dtype)
        band.masked_fill_(torch.ones(rows, D + rows, dtype=torch.bool).triu(D + 1), float("-inf"))
        _BANDS[dtype] = band  # views of an older band stay valid
    return band[:T, D - P : D + T]


def attend(qkv: torch.Tensor, K: torch.Tensor, V: torch.Tensor, P: int, bias: torch.Tensor | None,
           n_head: int) -> torch.Tensor:  # fmt: skip
    """qkv (T, 3C): the new rows' queries, keys and values. Their keys and values go to cache entries
    P..P+T-1 of K, V (nh, capacity, hs), and each row attends to entries 0..P+T-1 as ``bias`` allows
    (T, P+T), 0 = may attend, -inf = may not (attn_bias); None: causal (each row sees
    the entries up to its own). -> (T, C), the heads side by side"""
    T, C = qkv.size(0), qkv.size(1) // 3
    hs = C // n_head
    lib, dtype = kernel(), qkv.dtype
    if (lib is None or dtype not in _SYMBOLS or hs not in HEAD_SIZES
            or not (qkv.is_contiguous() and K.is_contiguous() and V.is_contiguous() and qkv.is_cpu)
            or K.dtype != dtype or K.size(1) < P + T or V.shape != K.shape
            or (bias is not None and (bias.dtype != dtype or bias.shape != (T, P + T) or bias.stride(1) != 1))):  # fmt: skip
        return attend_torch(qkv, K, V, P, bias, n_head)
    y = torch.empty(T, C, dtype=dtype)
    failed = getattr(lib, _SYMBOLS[dtype])(
        qkv.data_ptr(), T, n_head, hs, K.data_ptr(), V.data_ptr(), K.size(1), P,
        None if bias is None else bias.data_ptr(), 0 if bias is None else bias.stride(0), 1.0 / math.sqrt(hs),
        y.data_ptr(),
    )  # fmt: skip
    assert not failed, "attention.cpp is built for every size in HEAD_SIZES"
    return y


def attend_torch(qkv: torch.Tensor, K: torch.Tensor, V: torch.Tensor, P: int, bias: torch.Tensor | None,
                 n_head: int) -> torch.Tensor:  # fmt: skip
    """``attend`` on torch: the same numbers within rounding, where the kernel is not built. -> (T, C)"""
    T, C = qkv.size(0), qkv.size(1) // 3
    hs = C // n_head
    q, k, v = qkv.view(T, 3, n_head, hs).permute(1, 2, 0, 3)  # each (nh, T, hs)
    K[:, P : P + T] = k
    V[:, P : P + T] = v
    keys, values = K[:, : P + T], V[:, : P + T]  # (nh, P+T, hs)
    if T > 1 and P == 0 and bias is None:  # a prefill: the fused causal kernel
        # batched (1, nh, T, hs): with 3-D inputs torch takes its unfused path (~1.7x the time at 128 rows)
        y = F.scaled_dot_product_attention(q[None], keys[None], values[None], is_causal=True)[0]  # (nh, T, hs)
    else:
        scale = 1.0 / math.sqrt(hs)
        if bias is None and T > 1:  # a chain after the cache
            bias = causal_bias(P, T, qkv.dtype)  # (T, P+T) view
        if bias is None:  # one token: it sees every entry
            att = torch.bmm(q, keys.transpose(1, 2)).mul_(scale)  # (nh, T, P+T)
        else:  # scale * (q @ k^T) + bias in one kernel
            att = torch.baddbmm(bias, q, keys.transpose(1, 2), alpha=scale)  # (nh, T, P+T)
        y = torch.bmm(att.softmax(-1), values)  # (nh, T, hs)
    return y.transpose(0, 1).reshape(T, C)
