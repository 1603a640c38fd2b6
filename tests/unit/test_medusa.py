"""Medusa: the heads (shapes, init, save/load, sha256 and target pairing), which position each
head predicts (trained heads against the target itself, and the cached feature the drafter reads
against a fresh forward), and the candidate tree (distinct paths, the budget, the sparse-tree
pruning). Greedy equality and the KV cache are covered by tests/unit/test_engine.py (medusa is in
DRAFTERS), exactness by tests/statistical/test_exactness_real_target.py, typical acceptance by
tests/unit/test_typical.py, the pages by tests/app/test_medusa_pages.py."""

import math
import shutil
from itertools import product

import pytest
import torch

from models.artifacts import check_artifact, sha256
from models.medusa import DEFAULT_PATH, MedusaError, MedusaHeads, cached_heads, load_heads, save_heads
from specviz.core.engine import Generation
from specviz.core.settings import Settings
from specviz.core.target import window_start
from specviz.training.distill import DEFAULT_CORPUS
from specviz.training.train import split

PROMPT = "ROMEO:\nBut soft, what light through yonder window breaks?\nJULIET:\nAy me!"


def test_heads_shapes_and_init_is_the_targets_next_token(target):
    heads = MedusaHeads.from_target(target.model, 3)
    h = torch.randn(2, 5, target.config.n_embd)
    out = heads(h)
    assert out.shape == (3, 2, 5, target.config.vocab_size)
    # W = 0 at init: every head is the target's own head on ln_f(h), as in Medusa-1
    with torch.no_grad():
        want = target.model.lm_head(target.model.transformer.ln_f(h))
    assert torch.allclose(out, want.expand_as(out), atol=1e-5)
    assert all(not p.requires_grad for p in heads.ln_f.parameters())  # the target's norm stays frozen


def test_save_load_sha_and_pairing(target, tiny, tmp_path):
    heads = MedusaHeads.from_target(target.model, 2)
    path = tmp_path / "medusa.safetensors"
    save_heads(path, heads, {"target_sha256": sha256(target.path)})
    back = load_heads(path, target.path)
    assert back.config == heads.config
    assert all(torch.equal(a, b) for a, b in zip(back.state_dict().values(), heads.state_dict().values(), strict=True))
    with pytest.raises(MedusaError, match="trained on another target") as e:
        load_heads(path, tiny.path)
    assert "\n" not in str(e.value)
    (tmp_path / "SHA256SUMS").write_text(f"{'0' * 64}  medusa.safetensors\n")  # a recorded hash it does not match
    with pytest.raises(MedusaError, match="sha256"):
        load_heads(path, target.path)
    (tmp_path / "SHA256SUMS").unlink()
    path.write_bytes(b"not a safetensors file")
    with pytest.raises(MedusaError, match="cannot load Medusa heads"):
        load_heads(path, target.path)
    assert check_artifact(DEFAULT_PATH)  # the shipped heads are listed in models/SHA256SUMS and match


def test_shipped_heads_are_refused_for_another_target(tiny, tmp_path):
    with pytest.raises(MedusaError, match="another target"):
        Generation(tiny, [1, 2, 3], Settings(drafter="medusa"))
    copy = tmp_path / "other.safetensors"  # the same bytes under another name: pairing is by sha256, not name
    shutil.copy(DEFAULT_PATH, copy)
    assert load_heads(copy, DEFAULT_PATH.parent / "target.safetensors").config.n_heads >= 3


@pytest.mark.skipif(not DEFAULT_CORPUS.is_file(), reason="needs ../shared/data/tinyshakespeare.txt")
@torch.no_grad()
def test_head_i_predicts_i_plus_one_steps_ahead(target):
    """On training text, head i at position t agrees with the target's own argmax at t + i (its
    prediction of x_{t+1+i}) far above chance (1/65); one step off, it agrees far less."""
    heads = cached_heads(target.path, torch.float32)
    ids = torch.tensor(target.tokenizer.encode(DEFAULT_CORPUS.read_text()[:100_000]))
    train_ids, _ = split(ids)
    x = train_ids[5000 : 5000 + 4 * 256].view(4, 256)  # (B, T)
    feats = target.model.features(x, (heads.config.feature_layer,))[0]  # (B, T, C)
    own = target.model.lm_head(target.model.transformer.ln_f(feats)).argmax(-1)  # (B, T) the target's x_{t+1}
    guess = heads(feats).argmax(-1)  # (H, B, T)
    T = x.size(1)
    agree = [float((guess[i - 1, :, : T - i] == own[:, i:]).double().mean()) for i in range(1, len(guess) + 1)]
    off_by_one = float((guess[0, :, : T - 2] == own[:, 2:]).double().mean())  # head 1 read as if it were head 2
    # measured with the shipped heads: 0.44 for head 1, 0.10 one step off, 1/65 by chance
    assert agree[0] > 0.3 and agree[0] > off_by_one + 0.15, (agree, off_by_one)
    assert all(a > 5 / 65 for a in agree), agree


@torch.no_grad()
def test_drafter_reads_the_feature_before_the_root_and_prunes_like_medusa(target64):
    """Each round: the feature the heads read is the cache entry of context[-2], equal to a fresh
    forward's; depth i holds head i's top tokens; the tree keeps the paths with the highest product
    of head probabilities, distinct, within the budget, at most min(K, H) deep."""
    prompt = target64.tokenizer.encode(PROMPT)
    k, nodes = 4, 12
    gen = Generation(target64, prompt, Settings(drafter="medusa", k=k, temperature=0.8, seed=1, max_new_tokens=40,
                                                medusa_nodes=nodes, medusa_top_k=3))  # fmt: skip
    heads = gen.drafter.heads
    H = heads.config.n_heads
    while not gen.done:
        context, limit = list(gen.tokens), gen.draft_limit
        r = gen.step()
        notes = r.draft_notes
        if limit == 0:  # the last token: nothing to draft
            assert not r.draft_tokens and "skipped" in notes
            continue
        assert notes["feature_entry"] == len(context) - 2
        s = window_start(len(context), target64.config.block_size)
        ctx = torch.tensor([context[s:]])
        fresh = target64.model.features(ctx, (heads.config.feature_layer,))[0, 0, -2]  # (C,) context[-2]
        probs = heads(fresh).softmax(-1)  # (H, V)
        depth = min(limit, H)
        top_p, top_t = probs[:depth].topk(3, -1)
        assert [[c["token"] for c in row] for row in notes["heads"]] == top_t.tolist()
        assert torch.allclose(torch.tensor([[c["p"] for c in row] for row in notes["heads"]], dtype=torch.float64),
                              top_p, atol=1e-9)  # fmt: skip
        # the tree: paths distinct, each node's token from its depth's head, the budget, the pruning
        paths, tokens = [], r.draft_tokens
        for i, par in enumerate(r.draft_parents):
            paths.append((paths[par] if par >= 0 else ()) + (tokens[i],))
        assert len(set(paths)) == len(paths) <= nodes and max(map(len, paths)) <= min(k, H)
        assert all(p[-1] in top_t[len(p) - 1].tolist() for p in paths)
        score = {(): 1.0}
        for d in range(1, depth + 1):
            for path in product(*[top_t[j].tolist() for j in range(d)]):
                score[path] = math.prod(float(probs[j, t]) for j, t in enumerate(path))
        best = sorted((v for p, v in score.items() if p), reverse=True)[: len(paths)]
        assert sorted((score[p] for p in paths), reverse=True) == pytest.approx(best, rel=1e-9)


def test_knobs_are_checked():
    with pytest.raises(ValueError, match=r"medusa [a-z ]+ must be between"):
        Settings(drafter="medusa", medusa_nodes=0).check()
    with pytest.raises(ValueError, match=r"medusa [a-z ]+ must be between"):
        Settings(drafter="medusa", medusa_top_k=9).check()


@pytest.mark.parametrize("flags, message", [(["--heads", "0"], "--heads must be between 1 and 8"),
                                            (["--block", "300"], "--block must be between"),
                                            (["--batch-size", "0"], "--batch-size must be between"),
                                            (["--lr", "nan"], "--lr must be in")])  # fmt: skip
def test_train_medusa_refuses_bad_flags_before_any_work(tmp_path, capsys, flags, message):
    from specviz.cli.main import main

    assert main(["train-medusa", "--out", str(tmp_path / "m.safetensors"), "--resume-dir", str(tmp_path), *flags]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "m.safetensors").exists()


@pytest.mark.skipif(not DEFAULT_CORPUS.is_file(), reason="needs ../shared/data/tinyshakespeare.txt")
def test_train_medusa_resumes_where_it_was_interrupted(tmp_path, monkeypatch):
    """Ctrl-C at step 3 of 5 saves the state; the same command then continues from step 3 and
    ends with exactly the heads of an uninterrupted run (every step's batch depends on (seed, step))."""
    import argparse

    from specviz.training import train_medusa as tm

    monkeypatch.setattr(tm, "head_accuracy", lambda *a: {"target_top1": 0.0, "head_top1": [], "val_chars": 0})
    parser = argparse.ArgumentParser()
    tm.add_args(parser)

    def run(name: str, interrupt_at: int | None = None):
        args = parser.parse_args(["--out", str(tmp_path / name), "--resume-dir", str(tmp_path / f"r-{name}"),
                                  "--heads", "2", "--max-iters", "5", "--batch-size", "2", "--block", "16"])  # fmt: skip
        cfg = tm.config_from(args)
        cfg.eval_interval = 1
        calls, real = [0], tm.get_batch

        def batch(*a):
            calls[0] += 1
            if calls[0] == interrupt_at:
                raise KeyboardInterrupt
            return real(*a)

        monkeypatch.setattr(tm, "get_batch", batch)
        tm.train(args, cfg, "test")
        return calls[0]

    run("a.safetensors")
    with pytest.raises(SystemExit):
        run("b.safetensors", interrupt_at=4)  # steps 0..2 done, interrupted in step 3
    assert run("b.safetensors") == 2  # resumed: only steps 3 and 4 ran
    a = load_heads(tmp_path / "a.safetensors", DEFAULT_PATH.parent / "target.safetensors")
    b = load_heads(tmp_path / "b.safetensors", DEFAULT_PATH.parent / "target.safetensors")
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True))


def test_one_token_prompt_drafts_nothing_then_drafts(target64):
    """A one-token context has no cache entry before its root, so no feature for the heads: round 0
    drafts nothing (and says why), round 1 reads the feature round 0's pass wrote."""
    gen = Generation(target64, target64.tokenizer.encode("R"), Settings(drafter="medusa", k=4, temperature=0,
                                                                       max_new_tokens=10))  # fmt: skip
    first, second = gen.step(), gen.step()
    assert not first.draft_tokens and "no cache entry before the root" in first.draft_notes["skipped"]
    assert second.draft_tokens and second.draft_notes["feature_entry"] == 0


def test_typical_acceptance_with_medusa_is_greedy_at_temperature_0(target64):
    """At T = 0 p is one-hot, so typical acceptance keeps exactly the argmax: the baseline's text."""
    prompt = target64.tokenizer.encode(PROMPT)
    base = Generation(target64, prompt, Settings(drafter="none", temperature=0, max_new_tokens=120)).run()
    run = Generation(target64, prompt, Settings(drafter="medusa", k=4, temperature=0, max_new_tokens=120,
                                                verification="typical")).run()  # fmt: skip
    assert run.tokens == base.tokens and run.summary()["accepted"] > 0


@torch.no_grad()
def test_sequoia_walk_reads_each_rounds_root_feature(target64):
    """Medusa's children in Sequoia's walk: at depth d of a round, head d's top tokens from the feature
    that predicted the round's root (a fresh forward's), whatever was appended since; and the rates the
    walk measures from them: one row per depth, each a sum of chances of distinct tokens (at most 1)."""
    from specviz.adaptive import sequoia

    gen = Generation(target64, target64.tokenizer.encode(PROMPT), Settings(drafter="medusa", k=4))
    drafter, depth = gen.drafter, 3
    ranked = drafter.walk_children(target64.model, depth)
    layer = drafter.heads.config.feature_layer
    seq = target64.tokenizer.encode(PROMPT)
    for d in (1, 2, 3, 1, 2):  # a round of three levels, then the next round's first two
        fresh = target64.model.features(torch.tensor([seq]), (layer,))[0, 0, -(d + 1)]  # (C,) the root's predictor
        want = drafter.heads(fresh, depth).softmax(-1)[d - 1].topk(sequoia.MAX_RANKS).indices.tolist()
        assert ranked(seq, d) == want, d
        seq = seq + [want[0] if d < 3 else want[1]]
    rates = sequoia.measure(target64.model, drafter.walk_children(target64.model, depth), [seq], 0.0, depth,
                            new_tokens=60)  # fmt: skip
    assert len(rates.accept) == depth and rates.reached[0] >= rates.reached[1] >= rates.reached[2] > 0
    assert all(0 <= sum(row) <= 1 + 1e-9 for row in rates.accept)
