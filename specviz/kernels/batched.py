"""The lean pass over several sequences at once: each sequence (a ``CachedModel`` of the same model, its
own KV cache) sends its rows, and one pass runs them all. What batching is for: the products
(specviz/kernels/linear.py) read each weight once for every row of every sequence, so a pass over the
rows of B sequences costs far less than B passes while it is bound by reading the weights. Attention
is the one step that is not row by row: each sequence's rows attend to their own cache, one call each
(specviz/kernels/attention.py).

Batching changes no number: every step of a row (embedding, layer norms, the products, GELU, the
residual adds, and attention over its own cache in cache order) is computed row by row, whatever rows
share the pass, so a sequence's logits in a batch are bit for bit its logits alone
(tests/unit/test_batch.py). Each sequence's bookkeeping (its scratch, ``keep``, its captured features)
is its own, as after ``CachedModel.forward``.
"""

import torch

from specviz.kernels.attention import attend, attn_bias
from specviz.kernels.cached_model import CachedModel, block_with


@torch.no_grad()
def forward_batch(targets: list[CachedModel], passes: list[tuple]) -> list[torch.Tensor]:
    """``CachedModel.forward`` for each sequence, in one pass: passes[i] = (tokens, positions, tree_mask)
    runs after targets[i]'s cache (tree_mask (T_i, T_i) bool, True = may attend; None causal), writing
    its keys and values there as scratch until that target's ``keep``. -> per sequence (T_i, V) logits"""
    first = targets[0]
    assert all(t.w is first.w for t in targets), "one model: the sequences share its weights"
    assert len(set(map(id, targets))) == len(targets), "one cache per sequence"
    segments, start = [], 0  # per sequence: (target, first row, end row, P, bias)
    for t, (tokens, _, mask) in zip(targets, passes, strict=True):
        T, P = len(tokens), t.length
        t.reserve(P + T)
        t._new = T  # the pass's rows are its scratch, as after forward()
        bias = None if mask is None else attn_bias(P, mask, t.dtype)  # (T, P+T); None: causal
        segments.append((t, start, start + T, P, bias))
        start += T
    tokens = [tok for p in passes for tok in p[0]]
    positions = [pos for p in passes for pos in p[1]]
    x = first.embed(tokens, positions)  # (R, C): the rows of every sequence, one after another
    n_head = first.n_head

    def attention(layer: int):
        def run(qkv: torch.Tensor) -> torch.Tensor:  # (R, 3C) -> (R, C), each sequence on its own cache
            ys = []
            for t, a, b, P, bias in segments:
                K, V = t.kv[layer]
                ys.append(attend(qkv[a:b], K, V, P, bias, n_head))
            return ys[0] if len(ys) == 1 else torch.cat(ys)

        return run

    for layer, w in enumerate(first.w.layers):
        x = block_with(x, w, attention(layer))  # (R, C)
        for t, a, b, P, _ in segments:  # a captured layer: the sequence's features, as its forward writes them
            if layer in t.feature_index:
                t.feats[t.feature_index[layer], P : P + b - a] = x[a:b]
    logits = first.head(x)  # (R, V)
    return [logits[a:b] for _, a, b, _, _ in segments]
