"""Shipped checkpoints: they load safely, reproduce their recorded losses, and fail clearly."""

import hashlib
import shutil

import pytest
import torch
from conftest import ROOT

from models.checkpoint import CHECKPOINT_NAMES, CheckpointError, checkpoint_path, load_checkpoint, ngram_counts
from specviz.training.train import evaluate, split

CORPUS = ROOT.parent / "shared" / "data" / "tinyshakespeare.txt"
needs_corpus = pytest.mark.skipif(not CORPUS.is_file(), reason=f"corpus not found at {CORPUS} (../shared/data)")


@pytest.mark.parametrize("name", CHECKPOINT_NAMES)
def test_checkpoint_contents(name):
    ckpt = load_checkpoint(name)
    V = ckpt.config.vocab_size
    assert ckpt.path.stat().st_size <= 15_000_000
    assert ckpt.tokenizer.vocab_size == V == 65
    assert ckpt.bigram_counts.shape == (V, V) and ckpt.trigram_counts.shape == (V, V, V)
    # counts of the training split: every bigram but the last is the start of a trigram
    assert ckpt.bigram_counts.sum() - 1 == ckpt.trigram_counts.sum()
    assert (ckpt.trigram_counts.sum(-1) <= ckpt.bigram_counts).all()
    for key in ("iterations", "train_loss", "val_loss", "seed", "corpus_sha256", "command"):
        assert key in ckpt.meta, key
    assert ckpt.meta["command"].startswith("python -m specviz.train ")  # as recorded when trained
    assert not ckpt.model.training


def test_shipped_sizes_and_losses():
    target, tiny = load_checkpoint("target"), load_checkpoint("tiny")
    assert 2_500_000 <= target.model.num_params() <= 3_500_000
    assert 150_000 <= tiny.model.num_params() <= 300_000
    assert target.meta["val_loss"] <= 1.70
    assert tiny.meta["val_loss"] <= 2.10
    assert target.config.block_size == tiny.config.block_size  # the tiny model drafts for the target
    assert target.tokenizer.chars == tiny.tokenizer.chars


@pytest.mark.slow  # the validation loss and the n-gram counts over the corpus again (~12 s: target)
@needs_corpus
@pytest.mark.parametrize("name", CHECKPOINT_NAMES)
def test_recorded_losses_reproduce_on_the_corpus(name):
    ckpt = load_checkpoint(name)
    raw = CORPUS.read_bytes()
    assert hashlib.sha256(raw).hexdigest() == ckpt.meta["corpus_sha256"]
    ids = torch.tensor(ckpt.tokenizer.encode(raw.decode("utf-8")))
    train_ids, val_ids = split(ids)
    assert abs(evaluate(ckpt.model, val_ids) - ckpt.meta["val_loss"]) < 0.02
    bigram, trigram = ngram_counts(train_ids, ckpt.config.vocab_size)
    assert torch.equal(bigram, ckpt.bigram_counts) and torch.equal(trigram, ckpt.trigram_counts)


def test_missing_file_names_it(tmp_path):
    with pytest.raises(CheckpointError, match="not found: .*nope.safetensors"):
        load_checkpoint(tmp_path / "nope.safetensors")


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "flip-header"])
def test_corrupt_file_gives_one_line_error_naming_it(tmp_path, damage):
    bad = tmp_path / "bad.safetensors"
    shutil.copy(checkpoint_path("tiny"), bad)
    data = bad.read_bytes()
    if damage == "truncate":
        bad.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        bad.write_bytes(b"\x00\xff" * 1000)
    elif damage == "empty":
        bad.write_bytes(b"")
    else:
        bad.write_bytes(data[:8] + data[8:200].replace(b'"', b"'", 3) + data[200:])
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(bad)
    msg = str(e.value)
    assert str(bad) in msg and "\n" not in msg


def test_float64_load():
    ckpt = load_checkpoint("tiny", dtype=torch.float64)
    assert next(ckpt.model.parameters()).dtype == torch.float64


def test_shipped_files_match_the_manifest():
    from models.artifacts import check_artifact, read_manifest, sha256

    sums = read_manifest(checkpoint_path("target").parent)
    for name in CHECKPOINT_NAMES:
        path = checkpoint_path(name)
        assert sums[path.name] == hashlib.sha256(path.read_bytes()).hexdigest() == sha256(path)
        assert check_artifact(path)


def test_bit_flipped_tensor_is_one_line_naming_the_file(tmp_path):
    from models.artifacts import MANIFEST, record_artifact

    copy = tmp_path / "tiny.safetensors"
    shutil.copy(checkpoint_path("tiny"), copy)
    (tmp_path / MANIFEST).write_text("")
    record_artifact(copy)  # the manifest now records the good file
    assert load_checkpoint(copy).config.vocab_size == 65
    data = bytearray(copy.read_bytes())
    data[-1000] ^= 0x01  # one bit of one weight: still a valid safetensors file
    copy.write_bytes(bytes(data))
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(copy)
    assert str(copy) in str(e.value) and "sha256" in str(e.value) and "\n" not in str(e.value)


def _rewrite(src, dst, **config_changes):
    """A copy of a checkpoint with its header's config changed (no manifest beside it)."""
    import json

    from safetensors import safe_open
    from safetensors.torch import save_file

    with safe_open(src, framework="pt") as f:
        header, tensors = f.metadata(), {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118
    header["config"] = json.dumps(json.loads(header["config"]) | config_changes)
    save_file(tensors, dst, metadata=header)
    return dst


@pytest.mark.parametrize(
    "change, words",
    [
        ({"n_head": 0}, "n_head=0"),
        ({"n_head": 3}, "does not divide"),
        ({"n_layer": -1}, "n_layer"),
        ({"block_size": "256"}, "block_size"),
        ({"dropout": 2.0}, "dropout"),
        ({"n_embd": True}, "n_embd"),
        ({"vocab_size": 64}, "vocabulary"),
        ({"surprise": 1}, "unknown ['surprise']"),
        ({"n_layer": 2}, "tensors do not match"),
    ],
)
def test_bad_configs_are_refused_by_field(tmp_path, change, words):
    bad = _rewrite(checkpoint_path("tiny"), tmp_path / "bad.safetensors", **change)
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(bad)
    assert words in str(e.value) and str(bad) in str(e.value) and "\n" not in str(e.value)
