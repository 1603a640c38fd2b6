"""MTP modules (models/mtp.py), their training (specviz/training/train_mtp.py) and drafter
(specviz/drafters/mtp.py). The engine's greedy-equality (K = 1, 4, 8, past block_size) and KV-cache
tests cover the drafter through DRAFTERS; the exactness table covers it on the real target."""

import json

import pytest
import torch
from conftest import assert_training_resumes

from models.mtp import MTPConfig, MTPError, MTPHeads, load_mtp, save_mtp
from specviz.cli import main as cli
from specviz.core.engine import Generation
from specviz.core.sampling import scale_probs
from specviz.core.settings import Settings
from specviz.core.target import window_start
from specviz.drafters.mtp import MTPDrafter, agree, shared_mtp
from specviz.kernels.cached_model import CachedModel
from specviz.teaching.presets import PRESETS
from specviz.training.train_mtp import mtp_draft

TEXT = "ROMEO:\nBut soft, what light through yonder window breaks?\nIt is the east, and Juliet is the sun.\n"


def heads_for(target, depth=4, seed=0):
    torch.manual_seed(seed)
    return MTPHeads(MTPConfig(depth)).to(target.model.lm_head.weight.dtype).attach(target.model)


def test_shapes_and_loss_backpropagate_through_earlier_depths(target):
    heads = heads_for(target, depth=3)
    x = torch.tensor([target.tokenizer.encode(TEXT[:32])] * 2)  # (2, 32)
    with torch.no_grad():  # the target is frozen: as in training
        h0 = target.model.features(x, (3,))[0]  # (2, 32, C)
    hs = heads.unroll(h0, x)
    assert [tuple(h.shape) for h in hs] == [(2, 31, 256), (2, 30, 256), (2, 29, 256)]
    loss, metrics = heads.loss(h0, x)
    assert loss.ndim == 0 and set(metrics) == {"ce1", "ce2", "ce3"}
    heads.zero_grad()
    heads.unroll(h0, x)[-1].sum().backward()  # depth 3's state alone
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in heads.mods[0].parameters())
    assert not any(t.requires_grad for t in heads.frozen)  # the shared wte, ln_f, lm_head never train


@torch.no_grad()
def test_module_k_reads_the_token_k_steps_on(target64):
    """Module k's entry i depends on t_{i+k} and nothing later: changing t_{i+k+1} leaves it alone."""
    heads = heads_for(target64, depth=3)
    x = torch.tensor([target64.tokenizer.encode(TEXT[:24])])
    h0 = target64.model.features(x, (3,))[0]
    base = heads.unroll(h0, x)
    y = x.clone()
    y[0, 15] = (y[0, 15] + 1) % 65
    other = heads.unroll(h0, y)  # same features: only the tokens the modules read differ
    for k, (a, b) in enumerate(zip(base, other, strict=True), start=1):
        i = 15 - k  # the entry that reads t_15
        assert torch.equal(a[0, :i], b[0, :i]) and not torch.allclose(a[0, i], b[0, i])


@torch.no_grad()
def test_draft_q_rows_equal_the_modules_recomputed_from_scratch(target64):
    """Over a whole run past block_size (K varying, window jumps, scratch rows overwritten), every draft's
    q rows equal the modules run from scratch, without a cache, on the context and the draft so far."""
    heads = shared_mtp(target64)
    prompt = target64.tokenizer.encode((TEXT * 3)[:230])
    gen = Generation(target64, prompt, Settings(drafter="mtp", k=4, temperature=0.7, max_new_tokens=90, seed=2))
    drafter, checked, rng = gen.drafter, 0, iter([4, 1, 3, 2, 8] * 100)
    real = drafter.draft

    def draft(context, k, temperature, g):
        d = real(context, min(k, next(rng)), temperature, g)  # K varies round to round
        nonlocal checked
        if d.tokens:
            s = window_start(len(context), target64.config.block_size)
            ctx = torch.tensor([context[s:]])
            h0 = target64.model.features(ctx[:, :-1], (3,))[0]
            seq = torch.tensor([context[s:] + d.tokens])
            for j, x in enumerate(d.tokens):
                h = heads.unroll(h0, seq[:, : ctx.size(1) + j], j + 1)[-1][0, -1]
                q = scale_probs(heads.logits(h).softmax(-1), temperature)
                assert torch.allclose(d.q[j], q, atol=1e-10, rtol=0) and d.q[j][x] > 0
                checked += 1
        return d

    drafter.draft = draft
    trace = gen.run()
    assert checked > 60 and sum(r.reprefill for r in trace.rounds) >= 1
    assert max(len(r.draft_tokens) for r in trace.rounds) == 4  # K = 8 drafts D = 4: no module past D
    json.dumps(trace.rounds[3].draft_notes)


def test_a_module_feeds_only_the_entries_whose_tokens_changed(target):
    """Module k's scratch entries whose draft tokens were all accepted are kept: after a round that drafted D
    tokens and kept a of them, module k feeds max(a + 1, k) rows (the correction or bonus row, the entries
    reading it, and its new scratch ones), not a + k. At T = 0 a correction is never the rejected draft token.
    (That every draft's q is still the modules' from scratch: the test above, K varying.)"""
    prompt = target.tokenizer.encode(TEXT)
    trace = Generation(target, prompt, Settings(drafter="mtp", k=4, temperature=0, max_new_tokens=120)).run()
    checked = 0
    for before, r in zip(trace.rounds, trace.rounds[1:], strict=False):
        if (
            len(before.draft_tokens) == 4
            and r.draft_notes.get("passes")
            and not r.reprefill
            and r.window_start == before.window_start
        ):
            a = len(before.accepted_path)
            passes = r.draft_notes["passes"]  # fewer than 4 where the round had less room
            assert [p["rows"] for p in passes] == [max(a + 1, k) for k in range(1, len(passes) + 1)], r.index
            checked += 1
    assert checked > 20


def test_agree_is_the_common_prefix_length():
    for a, b, n in [([], [1], 0), ([1, 2, 3], [1, 2, 3, 4], 3), ([1, 2, 3, 4], [1, 2], 2), ([5, 2], [1, 2], 0),
                    (list(range(100)), list(range(37)) + [0] * 70, 37), ([1, 2, 3], [1, 2, 4], 2)]:  # fmt: skip
        assert agree(a, b) == agree(b, a) == n


@torch.no_grad()
def test_greedy_draft_equals_the_training_reference(target64):
    heads = shared_mtp(target64)
    context = target64.tokenizer.encode(TEXT)
    drafter = MTPDrafter(heads, CachedModel(target64.model))
    draft = drafter.draft(context, 8, 0.0, torch.Generator().manual_seed(0))
    h0 = target64.model.features(torch.tensor([context[:-1]]), (3,))[0]
    assert draft.tokens == mtp_draft(heads, h0, torch.tensor([context]), 4)[0].tolist()
    assert draft.q is not None and draft.notes["modules"] == 4 and len(draft.notes["passes"]) == 4


def test_fewer_modules_draft_shallower(target):
    prompt = target.tokenizer.encode(TEXT)
    run = Generation(target, prompt, Settings(drafter="mtp", k=8, temperature=0, max_new_tokens=40,
                                              mtp_modules=2)).run()  # fmt: skip
    assert max(len(r.draft_tokens) for r in run.rounds) == 2
    adaptive = Generation(target, prompt, Settings(drafter="mtp", k=8, k_auto=True, max_new_tokens=5))
    assert adaptive.adaptive.k_max == 4
    with pytest.raises(ValueError, match="mtp modules"):
        Settings(drafter="mtp", mtp_modules=5).check()


def test_save_load_pairing_and_sha256(target, tiny, tmp_path):
    heads = heads_for(target, depth=2)
    path = tmp_path / "m.safetensors"
    save_mtp(path, heads, target.path, {"command": "test"})
    loaded = load_mtp(path, target)
    for k, v in heads.state_dict().items():
        assert torch.equal(loaded.state_dict()[k], v.half().float()), k  # float16 on disk
    with pytest.raises(MTPError, match="another target") as e:
        load_mtp(path, tiny)
    assert "\n" not in str(e.value)
    (tmp_path / "SHA256SUMS").write_text(f"{'0' * 64}  m.safetensors\n")
    with pytest.raises(MTPError, match="sha256") as e:
        load_mtp(path, target)
    assert "\n" not in str(e.value)
    with pytest.raises(MTPError, match="not found"):
        load_mtp(tmp_path / "none.safetensors", target)


def test_shipped_modules_are_recorded_and_paired(target):
    heads = load_mtp("models/mtp.safetensors", target)  # check_artifact: listed in SHA256SUMS and matching
    from models.artifacts import check_artifact

    assert check_artifact("models/mtp.safetensors")
    assert heads.config.depth == MTPConfig.depth and heads.meta["val_depth_accuracy"]["cumulative"][0] > 0.5


def test_cli_refuses_modules_of_another_target(capsys):
    assert cli.main(["generate", "--drafter", "mtp", "--model", "tiny", "--max-new-tokens", "5"]) == 2
    err = capsys.readouterr().err.strip()
    assert "another target" in err and "\n" not in err and err.startswith("error:")


def test_train_mtp_resumes_where_it_stopped(tmp_path, monkeypatch):
    """An interrupted run continued from --resume-dir ends with the same modules as an uninterrupted one."""
    corpus = tmp_path / "text.txt"
    corpus.write_text("".join(p.text for p in PRESETS) * 2)
    args = ["train-mtp", "--depth", "2", "--data", str(corpus), "--max-iters", "4", "--eval-interval", "2",
            "--batch-size", "2", "--block", "16", "--eval-windows", "4"]  # fmt: skip
    assert_training_resumes(args, tmp_path, monkeypatch, "mtp-*.pt")


def test_train_mtp_bad_input_is_one_line(capsys):
    assert cli.main(["train-mtp", "--depth", "0", "--out", "/tmp/x.safetensors"]) == 2
    assert cli.main(["train-mtp", "--block", "999", "--out", "/tmp/x.safetensors"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("error:") for line in err)
