"""The fast paths of the transformers target's pass (specviz/llm/target.py), each pinned to the explicit path it
replaces, in float64 on the tiny random Llama and GPT-2 (tests/llm_models.py):
- a causal chain right after the cache passes no attention mask (transformers builds its own causal mask, or
  none for one row and for a prefill), where a tree or a scratch extend passes the 4D additive mask;
- ``skip`` leaves a prefill round's context rows out of the language-model head (transformers' logits_to_keep);
  the character model's CachedModel takes the same argument, and the engine's split takes either result."""

import pytest
import torch

from specviz.core.engine import Generation, pass_inputs
from specviz.core.settings import Settings
from specviz.drafters.base import chain
from tests.llm_models import checkpoint

KINDS = ("llama", "gpt2")
PROMPT = "ROMEO:\nBut soft, what light through yonder window breaks? But soft, what"


class Seen:
    """What the model's forward was called with (the attention mask) and how many rows reached its head, seen on
    the target's ``net`` (specviz/llm/lean.py), the same for every target of the model."""

    def __init__(self, model):
        self.masks, self.head_rows = [], []
        self.hooks = [
            model.base_model.register_forward_pre_hook(self.pass_, with_kwargs=True),
            model.get_output_embeddings().register_forward_hook(lambda m, i, o: self.head_rows.append(o.shape[-2])),
        ]

    def pass_(self, module, args, kwargs):
        self.masks.append(kwargs.get("attention_mask"))

    def remove(self):
        for h in self.hooks:
            h.remove()


def causal(T: int) -> torch.Tensor:
    return torch.ones(T, T, dtype=torch.bool).tril()


def prompted(kind: str, synced: bool = True):
    """The tiny model, the prompt's ids, and a target whose cache holds the prompt minus its last token
    (synced) or nothing."""
    ck = checkpoint(kind)
    ctx = ck.tokenizer.encode(PROMPT)
    t = ck.target_model()
    if synced:
        t.sync(ctx)
    return ck, ctx, t


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("rows", [1, 5])
def test_a_causal_chain_passes_no_mask_and_equals_the_masked_pass(kind, rows):
    ck, ctx, t = prompted(kind)
    P = t.length
    tokens, positions = ctx[-1:] + [5, 9, 11, 20][: rows - 1], list(range(P, P + rows))
    seen = Seen(ck.target_model().net)  # the model the passes run: its linear layers on the kernel
    try:
        fast = t.forward(tokens, positions)
        masked = t.forward(tokens, positions, causal(rows))  # the explicit 4D mask of the same causal chain
    finally:
        seen.remove()
    assert seen.masks[0] is None, "the chain's pass took the masked path"
    assert seen.masks[1] is not None and seen.masks[1].shape == (1, 1, rows, P + rows)
    assert fast.shape == masked.shape == (rows, t.vocab_size)
    torch.testing.assert_close(fast, masked, rtol=0, atol=1e-10)
    assert not torch.equal(fast[0], t.forward([7], [P])[0]), "different tokens must give different rows"


@pytest.mark.parametrize("kind", KINDS)
def test_a_prefill_passes_no_mask_and_equals_the_masked_pass(kind):
    ck, ctx, fast_t = prompted(kind, synced=False)
    masked_t = ck.target_model()
    seen = Seen(ck.target_model().net)  # the model the passes run: its linear layers on the kernel
    try:
        fast = fast_t.forward(ctx, list(range(len(ctx))))
        masked = masked_t.forward(ctx, list(range(len(ctx))), causal(len(ctx)))
    finally:
        seen.remove()
    assert seen.masks[0] is None and seen.masks[1] is not None
    torch.testing.assert_close(fast, masked, rtol=0, atol=1e-10)
    fast_t.keep(list(range(len(ctx))), ctx)
    masked_t.keep(list(range(len(ctx))), ctx)
    for a, b in zip(fast_t.cache.layers, masked_t.cache.layers, strict=True):  # the cache each leaves behind
        torch.testing.assert_close(a.keys, b.keys, rtol=0, atol=1e-10)
        torch.testing.assert_close(a.values, b.values, rtol=0, atol=1e-10)


@pytest.mark.parametrize("kind", KINDS)
def test_positions_that_are_not_the_next_entries_keep_the_explicit_mask(kind):
    ck, ctx, t = prompted(kind)
    P = t.length
    seen = Seen(ck.target_model().net)  # the model the passes run: its linear layers on the kernel
    try:
        t.forward(ctx[-1:] + [5], [P, P + 1])  # the next entries: no mask
        t.forward(ctx[-1:] + [5], [P, P + 2])  # a gap (a tree's depth, an extra's offset): the explicit mask
    finally:
        seen.remove()
    assert seen.masks[0] is None and seen.masks[1] is not None


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("skip", [1, 20])
def test_skip_leaves_the_prefix_rows_out_of_the_head(kind, skip):
    ck, ctx, whole_t = prompted(kind, synced=False)
    skip_t = ck.target_model()
    seen = Seen(ck.target_model().net)  # the model the passes run: its linear layers on the kernel
    try:
        whole = whole_t.forward(ctx, list(range(len(ctx))))
        part = skip_t.forward(ctx, list(range(len(ctx))), skip=skip)
    finally:
        seen.remove()
    assert seen.head_rows == [len(ctx), len(ctx) - skip]
    assert part.shape == (len(ctx) - skip, whole_t.vocab_size)
    torch.testing.assert_close(part, whole[skip:], rtol=0, atol=1e-10)
    with pytest.raises(AssertionError):
        skip_t.forward(ctx[:3], [0, 1, 2], skip=3)  # no row left


def test_the_character_model_skips_rows_too(target64):
    t = target64.target_model()
    ctx = target64.tokenizer.encode("ROMEO:\nBut soft, what light")
    whole = t.forward(ctx, list(range(len(ctx))))
    part = target64.target_model().forward(ctx, list(range(len(ctx))), skip=len(ctx) - 3)
    assert part.shape == (3, whole.shape[1])
    torch.testing.assert_close(part, whole[-3:], rtol=0, atol=1e-10)


@pytest.mark.parametrize("kind", KINDS)
def test_the_engines_prefill_round_skips_the_prompt_rows(kind):
    """The first round's pass carries the prompt (its prefix): only the root's row reaches the head, and the
    split of either result (every row's logits, or the rows after the prefix) is the same."""
    ck = checkpoint(kind)
    prompt = ck.tokenizer.encode(PROMPT)
    gen = Generation(ck, prompt, Settings(drafter="none", temperature=0.0, max_new_tokens=3))
    seen = Seen(ck.target_model().net)  # the model the passes run: its linear layers on the kernel
    try:
        gen.step()
        gen.step()
    finally:
        seen.remove()
    assert seen.head_rows == [1, 1] and seen.masks == [None, None]
    t = ck.target_model()
    _, missing = t.trim_missing(prompt)
    vp = pass_inputs(t, prompt[-1], chain([]), missing)
    assert vp.prefix == len(prompt) - 1
    whole = t.forward(vp.tokens, vp.positions, vp.mask)
    part = t.forward(vp.tokens, vp.positions, vp.mask, skip=vp.prefix)
    torch.testing.assert_close(vp.split(part)[0], vp.split(whole)[0], rtol=0, atol=1e-10)
    with pytest.raises(AssertionError):
        vp.split(whole[1:])  # neither every row nor the rows after the prefix
