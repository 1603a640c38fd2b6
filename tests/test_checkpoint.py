"""Shipped checkpoints: they load safely, reproduce their recorded losses, and fail clearly."""

import hashlib
import shutil
from pathlib import Path

import pytest
import torch

from models.checkpoint import CHECKPOINT_NAMES, CheckpointError, checkpoint_path, load_checkpoint, ngram_counts
from specviz.train import evaluate, split

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "tinyshakespeare.txt"
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
    assert ckpt.meta["command"].startswith("python -m specviz.train ")
    assert not ckpt.model.training


def test_shipped_sizes_and_losses():
    target, tiny = load_checkpoint("target"), load_checkpoint("tiny")
    assert 2_500_000 <= target.model.num_params() <= 3_500_000
    assert 150_000 <= tiny.model.num_params() <= 300_000
    assert target.meta["val_loss"] <= 1.70
    assert tiny.meta["val_loss"] <= 2.10
    assert target.config.block_size == tiny.config.block_size  # the tiny model drafts for the target
    assert target.tokenizer.chars == tiny.tokenizer.chars


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
