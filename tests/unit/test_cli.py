"""The CLI: info, generate and exactness, and a one-line error (exit 2) for each bad input."""

import json
import subprocess
import sys

import pytest
from conftest import ROOT

from specviz.adaptive.costs import cpu_name
from specviz.cli.main import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_info_json(capsys):
    code, out, _ = run(capsys, "info", "--json")
    rows = {r["name"]: r for r in json.loads(out)}
    assert code == 0 and {"target", "tiny"} <= set(rows)  # then the real models found (tests/unit/test_llm_cli.py)
    for r in (rows["target"], rows["tiny"]):
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
    assert code == 0 and out.startswith("JULIET:") and "target forward passes" in err and "K=4," in err
    # adaptive K: the summary says so, and the depth the drafter allows (lookahead: N - 1 = 3 by default)
    code, _, err = run(capsys, "generate", "--drafter", "lookahead", "--k", "auto", "--max-new-tokens", "8",
                       "--model", "tiny")  # fmt: skip
    assert code == 0 and f"K=auto (at most 3; verify costs: measured on {cpu_name()}, 1 thread" in err
    code, _, err = run(capsys, "generate", "--drafter", "lookahead", "--k", "auto", "--max-new-tokens", "8",
                       "--model", "tiny", "--costs", "reference")  # fmt: skip
    assert code == 0 and "K=auto (at most 3; verify costs: reference machine)," in err


def test_generate_neural_tree_with_replacement(capsys):
    code, out, err = run(capsys, "generate", "--prompt", "ROMEO:", "--drafter", "neural-tree", "--tree-sampling",
                         "with-replacement", "--neural-tree-nodes", "8", "--neural-tree-children", "2",
                         "--temperature", "0.8", "--max-new-tokens", "30", "--json")  # fmt: skip
    data = json.loads(out)
    assert code == 0 and data["tokens"] == 30 and data["settings"]["tree_sampling"] == "with-replacement"
    trees = [r for r in data["rounds"] if len(r["draft_tokens"]) > 1]
    assert trees and all(len(r["draft_tokens"]) <= 8 for r in data["rounds"])
    assert any(r["draft_parents"].count(-1) == 2 for r in trees)  # two sampled children of the root


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--prompt", ""], "prompt is empty"),
        (["--prompt", "café <b>"], "'é' (U+00E9), '<' (U+003C), '>' (U+003E)"),
        (["--k", "0"], "K must be between 1 and 32"),
        (["--k", "33"], "K must be between 1 and 32"),
        (["--temperature", "-0.5"], "temperature must be 0 or between 0.01 and 10.0, got -0.5"),
        (["--temperature", "1e-320"], "got 1e-320"),  # subnormal: logits / T overflow
        (["--temperature", "inf"], "got inf"),
        (["--temperature", "1e308"], "got 1e+308"),
        (["--temperature", "nan"], "got nan"),
        (["--seed", str(2**64)], f"seed must be between 0 and {2**63 - 1}"),
        (["--seed", "-1"], f"seed must be between 0 and {2**63 - 1}, got -1"),
        (["--drafter", "trie", "--verification", "nasd-seed"], "checks chains only"),
        (["--verification", "x" * 280_000], "unknown verification 'xxx"),
        (["--max-new-tokens", "0"], "between 1 and 4096"),
        (["--max-new-tokens", "4097"], "between 1 and 4096"),
        (["--drafter", "hydra"], "unknown drafter 'hydra'"),
        (["--drafter", "medusa", "--model", "tiny"], "medusa.safetensors was trained on another target"),
        (["--drafter", "medusa", "--medusa-top-k", "9"], "medusa candidates per head must be between 1 and 8, got 9"),
        (["--drafter", "medusa", "--verification", "block"], "block verification checks chains only"),
        (["--model", "missing.safetensors"], "checkpoint not found: missing.safetensors"),
        (["--k", "four"], "K must be a whole number or auto"),
        (["--drafter", "neural-tree", "--tree-sampling", "foo"], "unknown tree sampling 'foo'"),
        (["--drafter", "neural-tree", "--verification", "block"], "block verification checks chains only"),
        (["--drafter", "neural-tree", "--verification", "nasd-seed"], "checks chains only"),
        (["--drafter", "neural-tree", "--neural-tree-nodes", "0"], "node budget must be between 1 and 64"),
        (["--drafter", "neural-tree", "--neural-tree-children", "9"], "children per node must be between 1 and 8"),
        (["--neural-tree-nodes", "many"], "invalid int value"),
        (["--drafter", "neural", "--verification", "replacement-mismatch"], "needs a tree sampled without replacement"),
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
    code, out, _ = run(capsys, "exactness", "--drafter", "bigram", "--temperature", "1", "--k", "3", "--samples",
                       "200", "--model", "tiny", "--json")  # fmt: skip
    data = json.loads(out)
    assert code == 0 and data["samples"] == 200 and data["new_tokens"] == 4 and data["draft_positions"] == 3
    assert len(data["positions"]) == 4 and all(t["dof"] == 19 for t in data["positions"])
    assert data["every_position"]["dof"] == 4 * 19 and data["verdict"] in ("exact", "biased")
    assert 0 <= data["p_value"] <= 1 and 0 <= data["tv_distance"] <= 1 and data["first"]["dof"] >= 1
    expected = [r["expected"] for r in data["top"]]
    assert len(expected) == 10 and expected == sorted(expected, reverse=True) and expected[-1] > 0
    assert all(abs(r["observed"] * 200 - round(r["observed"] * 200)) < 1e-9 for r in data["top"])


def test_exactness_prompt_too_long_fails_before_sampling(capsys):
    code, _, err = run(capsys, "exactness", "--k", "8", "--prompt", "a" * 250, "--model", "tiny")
    assert code == 2 and "one window of 256" in err and err.count("\n") == 1


def test_long_values_are_cut_to_one_short_line(capsys):
    code, _, err = run(capsys, "generate", "--k", "9" * 280_000)
    assert (
        code == 2 and err.count("\n") == 1 and len(err.rstrip()) <= len("error: ") + 300 and err.rstrip().endswith("…")
    )


@pytest.fixture
def bad_paths(tmp_path):
    """Output paths no command can write: a file used as a folder, a folder used as a file,
    a place nobody may create files in (/proc refuses even root), and an empty name."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    return {"under a file": str(afile / "out"), "a folder": str(tmp_path), "proc": "/proc/specviz/out", "empty": "",
            "too long": "x" * 5000}  # fmt: skip


OUTPUT_COMMANDS = [["model-card", "--out", "{}"], ["bench", "--quick", "--out", "{}"],
                   ["bench-chart", "docs/bench.jsonl", "{}"], ["export-hf", "{}"]]  # fmt: skip


@pytest.mark.parametrize(
    "command, where",
    [(c, w) for c in OUTPUT_COMMANDS for w in ("under a file", "a folder", "proc", "empty", "too long")
     if not (c[0] == "export-hf" and w == "a folder")],  # a folder is what export-hf writes into
)  # fmt: skip
def test_unwritable_outputs_fail_up_front(capsys, monkeypatch, bad_paths, where, command):
    """Before any model is loaded or run started: load_checkpoint and the benchmark must not be reached."""
    import specviz.bench.runner
    import specviz.cli.flags
    import specviz.cli.measure
    import specviz.cli.run
    import specviz.cli.training

    def forbidden(*a, **k):
        raise AssertionError("work started before the output path was checked")

    for module in (specviz.cli.flags, specviz.cli.run, specviz.cli.measure, specviz.cli.training):
        if hasattr(module, "load_checkpoint"):
            monkeypatch.setattr(module, "load_checkpoint", forbidden)
    monkeypatch.setattr(specviz.cli.training, "render_card", forbidden)
    monkeypatch.setattr(specviz.bench.runner, "run_bench", forbidden)
    argv = [a.format(bad_paths[where]) for a in command]
    monkeypatch.chdir(ROOT)
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.startswith("error: ") and err.count("\n") == 1, err


@pytest.mark.parametrize(
    "content, message",
    [
        ("not json\n", "line 1 is not JSON"),
        ("[1, 2]\n", "line 1 is not a benchmark row: missing"),
        ("", "no benchmark rows"),
        ('{"a": 1}\n', "missing"),
        ("{bad: 1}\n", "not JSON"),
        ("[" * 100_000 + "\n", "not JSON"),
    ],
)
def test_bench_chart_malformed_rows(capsys, tmp_path, content, message):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(content)
    code, _, err = run(capsys, "bench-chart", str(rows), str(tmp_path / "x.png"))
    assert code == 2 and message in err and err.count("\n") == 1
    assert not (tmp_path / "x.png").exists()


@pytest.mark.parametrize(
    "field, value, message",
    [("temperature", "hot", "temperature is \"hot\", not float"), ("k", 1.5, "k is 1.5, not int"),
     ("speedup", None, "speedup is null"), ("drafter", 3, "drafter is 3, not str"),
     ("same_as_baseline", "yes", "not bool"), ("seconds", float("inf"), "seconds is Infinity")],
)  # fmt: skip
def test_bench_chart_rows_of_the_wrong_type(capsys, tmp_path, field, value, message):
    good = json.loads((ROOT / "docs" / "bench.jsonl").read_text().splitlines()[0])
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(good | {field: value}) + "\n")
    code, _, err = run(capsys, "bench-chart", str(rows), str(tmp_path / "x.png"))
    assert code == 2 and message in err and "line 1" in err and err.count("\n") == 1, err


def test_bench_chart_draws_a_title_with_dollars_as_text(capsys, tmp_path):
    code, out, err = run(capsys, "bench-chart", str(ROOT / "docs" / "bench.jsonl"), str(tmp_path / "x.png"),
                         "--title", r"$\frac{1}{$ costs $5")  # fmt: skip
    assert code == 0 and (tmp_path / "x.png").stat().st_size > 1000, err


def test_neural_drafter_refuses_a_target_with_another_vocabulary(capsys, tmp_path):
    other = tmp_path / "other.safetensors"
    _rewrite_vocab(ROOT / "models" / "tiny.safetensors", other)
    code, _, err = run(capsys, "generate", "--drafter", "neural", "--model", str(other), "--prompt", "ab")
    assert code == 2 and "another vocabulary" in err and err.count("\n") == 1


def _rewrite_vocab(src, dst):
    """A copy of a checkpoint whose vocabulary is the same 65 characters in another order."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    with safe_open(src, framework="pt") as f:
        header, tensors = f.metadata(), {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118
    header["vocab"] = json.dumps(json.loads(header["vocab"])[::-1])
    save_file(tensors, dst, metadata=header)


def test_help_exits_0(capsys):
    code, out, _ = run(capsys, "generate", "--help")
    assert code == 0 and "--temperature" in out
