"""Training smoke test: a few hundred characters, a few steps, on the CPU."""

import math

import torch

from models.checkpoint import load_checkpoint
from specviz.training.train import main, resume_path

TEXT = (
    "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\n"
    "First Citizen:\nYou are all resolved rather to die than to famish?\n\nAll:\nResolved. resolved.\n\n"
    "First Citizen:\nFirst, you know Caius Marcius is chief enemy to the people.\n"
)
SMALL = ["--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16", "--batch-size", "8",
         "--eval-interval", "10", "--eval-iters", "2", "--lr", "1e-2", "--warmup-iters", "2", "--seed", "7"]  # fmt: skip


def run(tmp_path, name, *extra):
    data = tmp_path / "text.txt"
    data.write_text(TEXT * 2)  # repeated, so the val split is learnable too
    out = tmp_path / f"{name}.safetensors"
    main(["--data", str(data), "--out", str(out), *SMALL, *extra])
    return out


def test_loss_goes_down_and_checkpoint_round_trips(tmp_path):
    out = run(tmp_path, "a", "--max-iters", "40")
    ckpt = load_checkpoint(out)
    assert ckpt.meta["iterations"] == 40
    uniform = math.log(ckpt.tokenizer.vocab_size)  # ≈ the loss at init
    assert ckpt.meta["train_loss"] < uniform - 0.8
    assert ckpt.meta["val_loss"] < uniform - 0.5
    assert ckpt.tokenizer.decode(ckpt.tokenizer.encode(TEXT)) == TEXT
    assert "--max-iters 40" in ckpt.meta["command"]
    assert resume_path(out).exists()


def test_resume_continues_exactly(tmp_path):
    straight = load_checkpoint(run(tmp_path, "straight", "--max-iters", "20"))
    run(tmp_path, "resumed", "--max-iters", "10", "--lr-decay-iters", "20")  # stops half way
    resumed = load_checkpoint(run(tmp_path, "resumed", "--max-iters", "20", "--resume"))
    assert resumed.meta["iterations"] == 20
    for (k, a), b in zip(straight.model.state_dict().items(), resumed.model.state_dict().values(), strict=True):
        assert torch.allclose(a, b, atol=1e-6), k
