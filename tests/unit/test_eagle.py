"""EAGLE heads (models/eagle.py), their training (specviz/training/train_eagle.py) and drafters
(specviz/drafters/eagle.py, eagle_tree.py). The engine's greedy-equality and KV-cache tests cover the
drafters through DRAFTERS; the exactness table covers eagle3 and eagle3-tree on the real target."""

import json

import pytest
import torch
from conftest import assert_training_resumes

from models.eagle import EagleConfig, EagleError, EagleHead, load_head, save_head, ttt_mask
from specviz.cli import main as cli
from specviz.core.sampling import probs_from_logits, scale_probs
from specviz.drafters.base import tree_mask
from specviz.drafters.eagle import EagleDrafter, HeadCache, lean_head
from specviz.kernels.attention import attn_bias
from specviz.kernels.cached_model import CachedModel
from specviz.teaching.presets import PRESETS

TEXT = "ROMEO:\nBut soft, what light through yonder window breaks?\nIt is the east, and Juliet is the sun.\n"


def head_for(target, variant=3, seed=0):
    torch.manual_seed(seed)
    layers = (3,) if variant == 1 else (0, 1, 3)
    return EagleHead(EagleConfig(variant, layers)).to(target.model.lm_head.weight.dtype).attach(target.model)


@pytest.mark.parametrize("variant", [1, 3])
def test_head_shapes_and_loss(target, variant):
    head = head_for(target, variant)
    x = torch.tensor([target.tokenizer.encode(TEXT[:33])] * 2)  # (2, 33)
    feats = target.model.features(x, head.config.layers)  # (F, 2, 33, C)
    assert feats.shape == (len(head.config.layers), 2, 33, 256)
    hs = head.unroll(feats[:, :, :32], x[:, 1:], steps=3)
    assert [tuple(h.shape) for h in hs] == [(2, 32, 256)] * 3
    assert head.logits(hs[0]).shape == (2, 32, 65)
    loss, metrics = head.loss(feats[:, :, :32], x[:, 1:], feats[-1][:, 1:], steps=2)
    assert loss.ndim == 0 and set(metrics) >= {"ce1", "ce2"} and ("feature1" in metrics) == (variant == 1)


def test_ttt_mask_is_the_inference_chain():
    m = ttt_mask(5, 2).view(5, 3, 5)  # step 2 over [step 0 | step 1 | step 2]
    assert m[4, 0].tolist() == [True, True, True, False, False]  # true features up to the root's entry 2
    assert m[4, 1].tolist() == [False, False, False, True, False] and m[4, 2].tolist() == [False] * 4 + [True]
    assert ttt_mask(5, 2).sum(1).min() >= 1  # every row sees itself


@torch.no_grad()
def test_unrolled_steps_equal_drafting_on_own_outputs(target64):
    """Training-time test unrolls exactly what the drafter does: step j at entry i is the chain drafted
    after entry i - j, each step reading the head's previous output (here with the data's tokens)."""
    head = head_for(target64)
    x = torch.tensor([target64.tokenizer.encode(TEXT[:25])])  # (1, 25)
    feats = target64.model.features(x, head.config.layers)[:, :, :24]
    hs = head.unroll(feats, x[:, 1:], steps=3)
    r = 15  # the root's entry
    h, kv = head.step(head.fused(feats[:, :, : r + 1]), x[:, 1 : r + 2])  # true features up to entry r
    h = h[:, -1:]
    for j in (1, 2):
        h, kv = head.step(h, x[:, r + j + 1 : r + j + 2], kv)  # own state, next token
        assert torch.allclose(h[0, 0], hs[j][0, r + j], atol=1e-10), f"step {j}"
    assert not torch.allclose(hs[1][0, r + 1], hs[0][0, r + 1])  # the fed-back state changes the step


def test_training_time_test_backpropagates_through_fed_back_states(target):
    head = head_for(target)
    x = torch.tensor([target.tokenizer.encode(TEXT[:17])])
    feats = target.model.features(x, head.config.layers)
    hs = head.unroll(feats[:, :, :16], x[:, 1:], steps=2)
    hs[0].retain_grad()
    head.logits(hs[1]).logsumexp(-1).sum().backward()  # a loss on step 2 alone
    assert hs[0].grad.abs().sum() > 0  # reaches step 1's outputs: they were fed back
    assert head.fuse.weight.grad.abs().sum() > 0


def test_save_load_pairing_and_sha256(target, tiny, tmp_path):
    head = head_for(target)
    path = tmp_path / "h.safetensors"
    save_head(path, head, target.path, {"command": "test"})
    loaded = load_head(str(path), target)
    for k, v in head.state_dict().items():
        assert torch.equal(loaded.state_dict()[k], v.half().float()), k  # float16 on disk
    with pytest.raises(EagleError, match="another target") as e:
        load_head(str(path), tiny)
    assert "\n" not in str(e.value)
    (tmp_path / "SHA256SUMS").write_text(f"{'0' * 64}  h.safetensors\n")
    with pytest.raises(EagleError, match="sha256"):
        load_head(str(path), target)


def test_cli_refuses_a_head_of_another_target(capsys):
    assert cli.main(["generate", "--drafter", "eagle3", "--model", "tiny", "--max-new-tokens", "5"]) == 2
    err = capsys.readouterr().err.strip()
    assert "another target" in err and "\n" not in err


@torch.no_grad()
def test_q_rows_are_what_the_tokens_were_drawn_from(target64):
    head = load_head("eagle3", target64)
    context = target64.tokenizer.encode(TEXT)
    drafter = EagleDrafter(head, CachedModel(target64.model))
    draft = drafter.draft(context, 4, 0.8, torch.Generator().manual_seed(1))
    # Again, independently: the target's features from a plain forward, the head chained by hand.
    feats = target64.model.features(torch.tensor([context[:-1]]), head.config.layers)
    h, kv = head.step(head.fused(feats), torch.tensor([context[1:]]))
    h = h[:, -1:]
    for j, x in enumerate(draft.tokens):
        q = scale_probs(probs_from_logits(head.logits(h[0, 0]), 1.0), 0.8)
        assert torch.allclose(draft.q[j], q, atol=1e-12) and draft.q[j][x] > 0
        h, kv = head.step(h, torch.tensor([[x]]), kv)
    assert len(draft.notes["predicted"]) == 4 and draft.notes["feature_rows"]
    json.dumps(draft.notes)


def test_head_cache_feeds_each_entry_once(target):
    head = load_head("eagle1", target)
    t = CachedModel(target.model)
    cache = HeadCache(head, t)
    context = target.tokenizer.encode(TEXT)
    cache.prepare(context[:40])
    cache.prepare(context[:50])
    assert cache.fed == 49 and cache.n == 49 == t.length


def test_train_eagle_resumes_where_it_stopped(tmp_path, monkeypatch):
    """An interrupted run continued from --resume-dir ends with the same head as an uninterrupted one."""
    corpus = tmp_path / "text.txt"
    corpus.write_text("".join(p.text for p in PRESETS) * 2)
    args = ["train-eagle", "--variant", "3", "--data", str(corpus), "--max-iters", "4", "--eval-interval", "2",
            "--batch-size", "2", "--block", "16", "--eval-windows", "4", "--ttt-steps", "2"]  # fmt: skip
    assert_training_resumes(args, tmp_path, monkeypatch, "eagle-*.pt")


def test_train_eagle_bad_input_is_one_line(capsys):
    assert cli.main(["train-eagle", "--variant", "1", "--no-ttt", "--out", "/tmp/x.safetensors"]) == 2
    assert cli.main(["train-eagle", "--variant", "2", "--out", "/tmp/x.safetensors"]) == 2
    assert cli.main(["train-eagle", "--variant", "3", "--block", "999", "--out", "/tmp/x.safetensors"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("error:") for line in err)


def test_charts_from_a_real_round_and_a_measurement(target, tiny):
    import plotly.graph_objects as go

    from specviz.charts import eagle as charts
    from specviz.core.engine import Generation
    from specviz.core.settings import Settings
    from specviz.training.eagle_depth import depth_acceptance

    prompt = target.tokenizer.encode(TEXT)
    gen = Generation(target, prompt, Settings(drafter="eagle3", k=3, temperature=0.8, max_new_tokens=8))
    r = gen.step()
    rows = charts.feature_rows(r)
    assert rows[0]["entry"] == len(prompt) - 1 - 6 and len(rows) == 6 + 2  # the last 6 entries fed, then steps 1, 2
    fig = charts.features_heatmap(r, gen.trace.vocab)
    assert len(fig.data[0].z) == len(rows) and len(fig.data[0].z[0]) == 16
    top = max(abs(v) for row in fig.data[0].z for v in row)  # the colour bar: three ticks, its ends and 0
    assert list(fig.data[0].colorbar.tickvals) == [-top, 0, top] and (fig.data[0].zmin, fig.data[0].zmax) == (-top, top)
    go.Figure(fig.to_dict())  # validates every property
    series = {"eagle3": {"drafter": "eagle3"}, "eagle3 no TTT": {"drafter": "eagle3", "eagle_ttt": False}}
    measured = depth_acceptance(target, [prompt], tiny.model, 0.0, k=2, max_new_tokens=8, series=series)
    for m in measured.values():
        assert m["tried"][0] == m["rounds"] and m["accepted"][0] == round(m["rate"][0] * m["tried"][0])
    fig = charts.depth_figure(measured, 0.0)
    assert [d.name for d in fig.data] == list(series) and list(fig.data[0].y) == measured["eagle3"]["rate"]
    go.Figure(fig.to_dict())


@torch.no_grad()
def test_the_lean_head_pass_equals_the_module(target64):
    """HeadCache runs the head through lean_block (preallocated cache, additive mask): the same numbers
    as EagleHead.step with its growing cache and bool mask, for context entries, a chain step and a
    tree depth whose nodes see only their ancestors (float64)."""
    head = load_head("eagle3", target64)
    context = target64.tokenizer.encode(TEXT)
    cache = HeadCache(head, CachedModel(target64.model))
    root_h, _ = cache.prepare(context)
    feats = target64.model.features(torch.tensor([context[:-1]]), head.config.layers)
    h, kv = head.step(head.fused(feats), torch.tensor([context[1:]]))  # (1, P, C)
    assert torch.allclose(root_h, h[0, -1:], atol=1e-12)
    P = cache.n
    # Two children of the root (tokens 5, 9), then one grandchild under the second (token 7).
    kids = cache.step(torch.cat([root_h, root_h]), [5, 9], P, attn_bias(P - 1, tree_mask([-1, -1])[1:], torch.float64))
    grand = cache.step(kids[1:], [7], P + 2, attn_bias(P - 1, tree_mask([-1, -1, 1])[3:], torch.float64))
    ref_kids, kv2 = head.step(h[:, -1:].expand(1, 2, -1), torch.tensor([[5, 9]]), kv,
                              torch.cat([torch.ones(2, P - 1, dtype=torch.bool), tree_mask([-1, -1])[1:]], 1))  # fmt: skip
    ref_grand, _ = head.step(ref_kids[:, 1:], torch.tensor([[7]]), kv2,
                             torch.cat([torch.ones(1, P - 1, dtype=torch.bool), tree_mask([-1, -1, 1])[3:]], 1))  # fmt: skip
    assert torch.allclose(kids, ref_kids[0], atol=1e-12) and torch.allclose(grand, ref_grand[0], atol=1e-12)
    assert torch.allclose(cache.lean.logits(grand), head.logits(ref_grand[0]), atol=1e-12)
    assert not torch.allclose(kids[0], kids[1])  # the siblings differ: each saw only its own token


def test_the_folded_entry_inputs_equal_fc_of_the_fused_features(target64, target):
    """LeanHead.entries folds fc into the fusion (one product) and its token half into a table: the same
    block inputs as fc(cat[fused(f), wte[x]]), to float64's rounding, and to float32's in the run's dtype."""
    for ckpt, atol in ((target64, 1e-12), (target, 1e-5)):
        lean = lean_head(head_for(ckpt, 3))
        feats = ckpt.model.features(torch.tensor([list(range(12))]), lean.config.layers)[:, 0]  # (F, T, C)
        tokens = [3, 9, 9, 0, 64, 1, 2, 5, 7, 11, 13, 17]
        ref = lean.fc(torch.cat([lean.fused(feats), lean.wte[tokens]], dim=-1))
        got = lean.entries(feats, tokens)
        assert got.shape == ref.shape == (12, lean.config.n_embd) and got.dtype == ref.dtype
        assert torch.allclose(got, ref, atol=atol), (got - ref).abs().max()
