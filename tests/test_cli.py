"""The CLI: info, generate and exactness, and a one-line error (exit 2) for each bad input."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from specviz.cli import main

ROOT = Path(__file__).resolve().parents[1]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_info_json(capsys):
    code, out, _ = run(capsys, "info", "--json")
    rows = {r["name"]: r for r in json.loads(out)}
    assert code == 0 and set(rows) == {"target", "tiny"}
    for r in rows.values():
        assert r["parameters"] > 0 and r["val_loss"] > 0 and r["train_loss"] > 0 and r["file_size_bytes"] > 0
        assert {"n_layer", "n_head", "n_embd", "block_size", "vocab_size"} <= set(r["config"])


def test_generate_json(capsys):
    code, out, _ = run(capsys, "generate", "--prompt", "ROMEO:", "--drafter", "trigram", "--k", "4",
                       "--temperature", "0.8", "--max-new-tokens", "40", "--seed", "1", "--json")  # fmt: skip
    data = json.loads(out)
    assert code == 0
    assert data["tokens"] == 40 == len(data["text"])
    assert data["target_forwards"] == len(data["rounds"])
    assert data["mean_accepted"] == pytest.approx(40 / data["target_forwards"])
    assert 0 <= data["acceptance_rate"] <= 1
    assert "".join(data["vocab"][t] for r in data["rounds"] for t in r["emitted"]) == data["text"]


def test_generate_text_and_summary(capsys):
    code, out, err = run(
        capsys, "generate", "--prompt", "JULIET:", "--drafter", "trie", "--max-new-tokens", "30", "--model", "tiny"
    )
    assert code == 0 and out.startswith("JULIET:") and "target forward passes" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--prompt", ""], "prompt is empty"),
        (["--prompt", "café <b>"], "'é' (U+00E9), '<' (U+003C), '>' (U+003E)"),
        (["--k", "0"], "K must be between 1 and 32"),
        (["--k", "33"], "K must be between 1 and 32"),
        (["--temperature", "-0.5"], "temperature must be 0 or more"),
        (["--max-new-tokens", "0"], "between 1 and 4096"),
        (["--max-new-tokens", "4097"], "between 1 and 4096"),
        (["--drafter", "medusa"], "unknown drafter 'medusa'"),
        (["--model", "missing.safetensors"], "checkpoint not found: missing.safetensors"),
        (["--k", "four"], "K must be a whole number or auto"),
    ],
)
def test_bad_input_one_line_exit_2(capsys, argv, message):
    code, out, err = run(capsys, "generate", *argv)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err


def test_process_exit_status_and_no_traceback():
    proc = subprocess.run(
        [sys.executable, "-m", "specviz", "generate", "--k", "99"], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 2 and proc.stderr == "error: K must be between 1 and 32, got 99\n"


def test_exactness_json(capsys):
    code, out, _ = run(
        capsys,
        "exactness",
        "--drafter",
        "bigram",
        "--temperature",
        "1",
        "--samples",
        "200",
        "--model",
        "tiny",
        "--json",
    )
    data = json.loads(out)
    assert code == 0 and data["samples"] == 200
    assert 0 <= data["p_value"] <= 1 and 0 <= data["tv_distance"] <= 1 and data["dof"] >= 1
    expected = [r["expected"] for r in data["top"]]
    assert len(expected) == 10 and expected == sorted(expected, reverse=True) and expected[-1] > 0
    assert all(abs(r["observed"] * 200 - round(r["observed"] * 200)) < 1e-9 for r in data["top"])
