"""One pass over several sequences of a transformers model (``HFTarget.forward_batch``): each sequence (an
HFTarget of the same model, its own DynamicCache of its own length) sends its rows, and one model call runs
them all, so the weights are read once for every row of every sequence.

The batch is laid out as transformers takes it, a batch dimension B:

    cache     every sequence's committed keys and values, left-padded to the longest (Lmax entries)
    rows      every sequence's rows, right-padded to the most rows (Tmax), each with its own position ids
    mask      one additive 4D mask (B, 1, Tmax, Lmax + Tmax): a sequence's row sees its own cache entries
              and its own rows as its tree_mask (or the causal pattern) allows, never a padding entry;
              a padding row sees only itself (so that no row of the softmax is empty) and is discarded

After the call, each sequence's new keys and values (the Tmax columns after Lmax, its first T_i of them)
are appended to its own cache as scratch, exactly where its own ``forward`` puts them, so ``keep``, the
crops and ``trim_to`` work as after a single forward.

What batching changes in the numbers: a padded pass is the same arithmetic with extra terms that are exactly
zero (a masked column's weight is exp(min - max) = 0), but the products over B rows and the attention over
Lmax columns are blocked differently than over one sequence's, so the sums may round apart in the last
bits: in float64 a sequence's logits match its lone pass to ~1e-13 (tests/unit/test_llm_batch.py asserts
1e-10 and equal tokens and draws); in float32 they may differ by ~1e-6, enough to flip a near tie.
"""

import torch
from transformers import DynamicCache

from models.gpt import PositionError


def batch_mask(lengths: list[int], allows: list[torch.Tensor], dtype: torch.dtype) -> torch.Tensor:
    """The additive mask of a padded batch: lengths[i] = P_i committed entries (left-padded to Lmax), allows[i]
    (T_i, T_i) bool over its new rows (True = may attend). -> (B, 1, Tmax, Lmax + Tmax), 0 where a row may
    attend, the dtype's minimum where not"""
    B, L, T = len(lengths), max(lengths), max(a.size(0) for a in allows)
    see = torch.zeros(B, T, L + T, dtype=torch.bool)
    see[:, range(T), [L + r for r in range(T)]] = True  # every row sees itself (padding rows: only that)
    for i, (P, allow) in enumerate(zip(lengths, allows, strict=True)):
        n = allow.size(0)
        see[i, :n, L - P : L] = True  # its own cache, none of the padding before it
        see[i, :n, L : L + n] = allow
    return torch.zeros(see.shape, dtype=dtype).masked_fill_(~see, torch.finfo(dtype).min)[:, None]


@torch.no_grad()
def forward_batch(targets: list, passes: list[tuple]) -> list[torch.Tensor]:
    """``HFTarget.forward`` for each sequence, in one model call: passes[i] = (tokens, positions, tree_mask)
    runs after targets[i]'s committed entries (its last forward's scratch dropped; tree_mask (T_i, T_i) bool,
    None causal), its keys and values left in its cache as scratch until that target's ``keep``.
    -> per sequence (T_i, V) logits"""
    first = targets[0]
    assert all(t.model is first.model for t in targets), "one model: the sequences share its weights"
    assert len(set(map(id, targets))) == len(targets), "one cache per sequence"
    lengths, allows = [], []
    for t, (tokens, positions, tree_mask) in zip(targets, passes, strict=True):
        PositionError.check(min(positions), max(positions), t.block_size)
        t._crop(t.length)  # as forward: the last pass's scratch goes
        T = len(tokens)
        lengths.append(t.length)
        allows.append(torch.ones(T, T, dtype=torch.bool).tril() if tree_mask is None else tree_mask)
    B, L, T = len(targets), max(lengths), max(len(p[0]) for p in passes)
    tokens = torch.zeros(B, T, dtype=torch.long)  # padding rows: token 0 at position 0, discarded
    positions = torch.zeros(B, T, dtype=torch.long)
    for i, (tok, pos, _) in enumerate(passes):
        tokens[i, : len(tok)] = torch.tensor(tok)
        positions[i, : len(pos)] = torch.tensor(pos)
    cache = DynamicCache(config=first.model.config)
    if L:
        for layer, held in enumerate(zip(*(t.cache.layers for t in targets), strict=True)):
            ref = next(h for h in held if h.is_initialized)
            shape = (B, ref.keys.shape[1], L, ref.keys.shape[-1])  # (B, H_kv, Lmax, D)
            keys, values = ref.keys.new_zeros(shape), ref.values.new_zeros(shape)
            for i, (h, P) in enumerate(zip(held, lengths, strict=True)):
                if P:
                    keys[i, :, L - P :], values[i, :, L - P :] = h.keys[0], h.values[0]
            cache.update(keys, values, layer)
    dev = first.device
    out = first.net(input_ids=tokens.to(dev), position_ids=positions.to(dev), past_key_values=cache,
                      attention_mask=batch_mask(lengths, allows, first.dtype).to(dev), use_cache=True)  # fmt: skip
    for layer, held in enumerate(cache.layers):  # each sequence's new entries, into its own cache
        for i, t in enumerate(targets):
            n = len(passes[i][0])
            t.cache.update(held.keys[i : i + 1, :, L : L + n], held.values[i : i + 1, :, L : L + n], layer)
    for t, p in zip(targets, passes, strict=True):
        t._new = len(p[0])
    return [out.logits[i, : len(p[0])].to(first.dtype) for i, p in enumerate(passes)]
