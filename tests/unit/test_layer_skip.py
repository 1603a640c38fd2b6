"""Layer-skip self-speculation: the draft is exactly the target's first n layers, final norm and
head (float64, 1e-10), it is computed inside the target's own KV cache (the prompt is prefilled
once, for all layers, and the draft feeds only its k tokens through n layers each round), and
the verify pass writes the same keys and values the draft did. specviz.bench.layer_sweep measures
acceptance for every n (counts, not timings)."""

import pytest
import torch

from specviz.bench.layer_sweep import acceptance_by_layers
from specviz.charts.atlas import layer_sweep_figure
from specviz.core.engine import Generation
from specviz.core.settings import Settings
from specviz.core.target import window_start
from specviz.kernels.cached_model import CachedModel

PROMPT = "ROMEO:\nBut soft, what light through yonder window breaks?\nROMEO:\nBut soft, what light"


@torch.no_grad()
def early_exit(model, tokens: list[int], n: int) -> tuple[torch.Tensor, list]:
    """The reference: the first n blocks of models/gpt.py over the whole sequence, from scratch,
    then ln_f and lm_head. -> (T, V) logits, per layer (k, v) each (nh, T, hs)"""
    t = model.transformer
    x = t.wte(torch.tensor([tokens])) + t.wpe(torch.arange(len(tokens)))  # (1, T, C)
    kvs = []
    for block in t.h[:n]:
        x, (k, v) = block(x, None, None)
        kvs.append((k[0], v[0]))
    return model.lm_head(t.ln_f(x))[0], kvs


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_draft_is_the_early_exit_of_the_first_n_layers(target64, n, temperature):
    prompt = target64.tokenizer.encode(PROMPT)
    gen = Generation(target64, prompt, Settings(drafter="layer-skip", layer_skip_layers=n, k=4, temperature=0.8,
                                                max_new_tokens=60, seed=1))  # fmt: skip
    for _ in range(3):
        gen.step()
    ctx = gen.tokens
    draft = gen.drafter.draft(ctx, 5, temperature, torch.Generator().manual_seed(7))
    s = window_start(len(ctx), target64.config.block_size)
    seq = ctx[s:] + draft.tokens[:-1]  # the draft fed the root, then its own tokens but the last
    logits, kvs = early_exit(target64.model, seq, n)
    want = torch.softmax(logits[-5:] / (temperature or 1.0), -1)  # (5, V)
    if temperature == 0:
        want = torch.nn.functional.one_hot(logits[-5:].argmax(-1), want.size(-1)).double()
        assert draft.tokens == logits[-5:].argmax(-1).tolist()
    assert draft.q.shape == want.shape and (draft.q - want).abs().max() < 1e-10
    # The committed entries are the target's; the draft's scratch entries after them hold the
    # first n layers' keys and values for the drafted tokens, as a fresh computation gives them.
    P = gen.target.length
    assert len(ctx) - 1 - s == P and gen.drafter.fed == sum(len(r.draft_tokens) for r in gen.trace.rounds) + 5
    for (K, V), (k, v) in zip(gen.target.kv[:n], kvs, strict=True):
        assert (K[:, : P + 5] - k).abs().max() < 1e-10 and (V[:, : P + 5] - v).abs().max() < 1e-10


def test_no_second_prefill_and_the_verifier_writes_what_the_draft_wrote(target64, monkeypatch):
    """Every call of the layer loop is counted: the prompt is prefilled once for all layers (no
    partial prefill for the draft), each round feeds exactly its drafted tokens through the n
    draft layers, one at a time, and the verify pass's keys and values for the shared layers
    equal the draft's."""
    calls = []  # (tokens, n_layers) per call of CachedModel.blocks
    blocks = CachedModel.blocks
    monkeypatch.setattr(CachedModel, "blocks", lambda self, x, P, mask=None, n_layers=None: (
        calls.append((x.size(0), n_layers)), blocks(self, x, P, mask, n_layers))[1])  # fmt: skip
    text = (PROMPT + "\n") * 4  # 344 characters: past block_size, so the window moves
    prompt = target64.tokenizer.encode(text)
    gen = Generation(target64, prompt, Settings(drafter="layer-skip", k=4, temperature=1.0, max_new_tokens=60, seed=3))
    n = gen.settings.layer_skip_layers
    draft_kv = []  # the shared layers' keys after each draft, before the verify pass overwrites them
    draft = gen.drafter.draft

    def spy(context, k, temperature, g):
        d = draft(context, k, temperature, g)
        draft_kv.append([K[:, : gen.target.length + len(d.tokens)].clone() for K, _ in gen.target.kv[:n]])
        return d

    gen.drafter.draft = spy
    while not gen.done:
        before = len(calls)
        r = gen.step()
        round_calls = calls[before:]
        partial = [c for c in round_calls if c[1] == n]
        full = [c for c in round_calls if c[1] is None]
        assert partial == [(1, n)] * len(r.draft_tokens)  # the drafted tokens only, never the context
        prefill = r.kv_before if r.index == 0 or r.reprefill else 0  # the prompt, or a moved window
        assert sum(t for t, _ in full) == prefill + 1 + len(r.draft_tokens)  # what plain decoding would feed
        assert r.draft_notes.get("skipped") is None or not r.draft_tokens
        if r.draft_tokens:
            # the kept entries (root, accepted drafts) the draft wrote too: all but the last drafted token's
            m = r.kv_before + min(1 + r.n_accepted, len(r.draft_tokens))
            for K_draft, (K, _) in zip(draft_kv[-1], gen.target.kv[:n], strict=True):
                assert (K_draft[:, :m] - K[:, :m]).abs().max() < 1e-10
    assert sum(r.reprefill for r in gen.trace.rounds) >= 1
    assert any(r.draft_notes.get("skipped") for r in gen.trace.rounds)  # the round the window moved


def test_layer_count_is_checked_against_the_model(target):
    with pytest.raises(ValueError, match="layer-skip needs 1 <= layers < 4"):
        Generation(target, [1, 2], Settings(drafter="layer-skip", layer_skip_layers=4))
    with pytest.raises(ValueError, match="layer-skip draft layers must be between 1 and 63"):
        Settings(drafter="layer-skip", layer_skip_layers=0).check()


def test_acceptance_grows_with_the_draft_layers(target):
    """Layer-skip's knob, measured: three layers of four draft better than one (the atlas's chart)."""
    rows = acceptance_by_layers(target, target.tokenizer.encode("ROMEO:\nWhat say you?\n"), 0.0, max_new_tokens=120)
    assert [r["layers"] for r in rows] == [1, 2, 3]
    assert all(0 <= r["accepted"] <= r["tried"] and r["tried"] > 0 for r in rows)
    assert (
        rows[-1]["acceptance"] > rows[0]["acceptance"]
        and rows[-1]["tokens_per_forward"] > rows[0]["tokens_per_forward"]
    )
    assert len(layer_sweep_figure(rows, 4).data) == 2
