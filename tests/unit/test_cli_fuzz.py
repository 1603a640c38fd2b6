"""The CLI under generated argument lists: whatever the arguments, exit status 0 or 2, no
traceback, at most 2 lines on stderr. Valid arguments are kept cheap (a few new tokens, a few
exactness runs, one token enumerated exactly); the benchmark's run and the model card's rendering
are replaced by stand-ins, since this tests what the CLI accepts, not what they compute
(tests/unit/test_bench.py and tests/unit/test_exactness.py do)."""

import json

import pytest
from conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import specviz.bench.runner
import specviz.cli.flags
import specviz.cli.main
import specviz.cli.measure
import specviz.cli.run
import specviz.cli.training
import specviz.training.distill
from models.checkpoint import load_checkpoint
from specviz.adaptive.costs import measure
from specviz.cli.main import main
from specviz.teaching.exactness import run_exactness

COMMAND_MODULES = (specviz.cli.flags, specviz.cli.run, specviz.cli.measure, specviz.cli.training)

CASES = {"run": 0, "exit 0": 0, "exit 2": 0}
CHECKPOINTS = {}  # loaded once for every case: read-only, and loading is not what is tested here
CURVES = {}  # the cost curve, measured once (~3 s each time a case asks for adaptive K): tests/unit/test_costs.py tests it

# Hostile values: numbers at and past every edge, text that is not a number, empty, huge.
ints = st.one_of(st.integers(-5, 40), st.integers(-(2**70), 2**70), st.sampled_from([0, 2**63 - 1, 2**63, 2**64]))
floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, 1e-320, 0.01, 10.0, 1e308]))
text = st.text(max_size=40) | st.sampled_from(["", "-", "--k", "x" * 5000, "**b** $x$ :smile:"])
value = st.one_of(ints.map(str), floats.map(repr), text)
# Counts of work: valid only at 1..3 (so a valid case stays cheap), otherwise out of every range.
small = st.one_of(st.integers(1, 3), st.integers(-5, 0), st.integers(20_001, 2**70)).map(str) | floats.map(repr) | text
PATHS = ["OUT", "", "/proc/specviz/x", "/", "afile/sub", "rows.jsonl", "docs/bench.jsonl", "bad.jsonl"]
path = st.sampled_from(PATHS) | text

RUN_FLAGS = {"--prompt": text | st.just("ROMEO:"), "--drafter": st.sampled_from(["none", "trie", "nasd", "neural", "distilled", "distilled-tree", "suffix", "layer-skip", "neural-tree", "x"]),
             "--k": value | st.just("auto"), "--temperature": value, "--seed": value, "--model": st.sampled_from(["target", "tiny", "nope"]) | path,
             "--verification": st.sampled_from(["lossless", "block", "nasd-seed", "replacement-mismatch", "?"]),
             "--tree-sampling": st.sampled_from(["with-replacement", "without-replacement", "foo"]) | text,
             "--neural-tree-nodes": value, "--neural-tree-children": value, "--min-context-count": value,
             "--trie-n": value, "--trie-prefix-len": value, "--trie-num-draft": value, "--nasd-n": value,
             "--nasd-filler-top-k": value, "--lookup-max-ngram": value, "--lookup-min-ngram": value,
             "--distilled-context": value, "--distilled-nodes": value, "--suffix-max-match": value,
             "--suffix-min-prob": value, "--suffix-max-nodes": value, "--layer-skip-layers": value}  # fmt: skip
COMMANDS = {
    "generate": RUN_FLAGS | {"--max-new-tokens": small},
    "exactness": RUN_FLAGS | {"--samples": small},
    "bench": {"--k": value, "--repeats": value, "--max-new-tokens": value, "--seed": value, "--threads": value, "--out": path},
    "model-card": {"--out": path},
    "distill": {"--data": path, "--target": st.sampled_from(["target", "nope"]) | path, "--out": path,
                "--max-context": value, "--top-k": value, "--min-count": value, "--limit-chars": value,
                "--resume-dir": path, "--threads": value},
    "info": {},
}  # fmt: skip
POSITIONAL = {"bench-chart": [path, path], "export-hf": [path]}


@st.composite
def argv(draw):
    command = draw(st.sampled_from([*COMMANDS, *POSITIONAL, "nonsense"]))
    out = [command] + [draw(s) for s in POSITIONAL.get(command, [])]
    flags = COMMANDS.get(command, RUN_FLAGS)
    for flag in draw(st.lists(st.sampled_from(sorted(flags)), max_size=5, unique=True)) if flags else []:
        out += [flag, draw(flags[flag])]
    for switch in ("--json", "--quick", "--no-transformers", "--nasd-continue-if-unknown", "--help", "--bogus"):
        if draw(st.integers(0, 9)) == 0:
            out.append(switch)
    return out


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz")
    (d / "afile").write_text("x")
    (d / "bad.jsonl").write_text('{"impl": 1}\nnot json\n')
    (d / "rows.jsonl").write_text((ROOT / "docs" / "bench.jsonl").read_text())
    (d / "docs").mkdir()
    (d / "docs" / "bench.jsonl").write_text((ROOT / "docs" / "bench.jsonl").read_text())
    return d


# derandomize: the same 100 cases on every run, so CI is reproducible and its time predictable
@settings(
    max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(args=argv())
def test_cli_fuzz(workdir, monkeypatch, capsys, args):
    bench_rows = [json.loads(line) for line in (ROOT / "docs" / "bench.jsonl").read_text().splitlines()]
    monkeypatch.chdir(workdir)  # relative output paths land here, never in the repository
    for module in COMMAND_MODULES:  # each looks load_checkpoint up in its own namespace
        if hasattr(module, "load_checkpoint"):
            monkeypatch.setattr(module, "load_checkpoint",
                                lambda n: CHECKPOINTS.get(n) or CHECKPOINTS.setdefault(n, load_checkpoint(n)))  # fmt: skip
    monkeypatch.setattr(specviz.cli.training, "render_card", lambda: "# card\n")
    monkeypatch.setattr(
        specviz.cli.flags, "measure", lambda m, **k: CURVES.get(id(m)) or CURVES.setdefault(id(m), measure(m, **k))
    )
    monkeypatch.setattr(specviz.bench.runner, "run_bench", lambda *a, **k: bench_rows)
    monkeypatch.setattr(
        specviz.training.distill, "build", lambda *a: {"contexts": 1, "train_chars": 1, "build_seconds": 0.0}
    )
    # at most 3 runs of one enumerated token: without --samples the CLI's default is 2,000 runs
    monkeypatch.setattr(specviz.cli.run, "run_exactness",
                        lambda t, p, s, n, *a, **k: run_exactness(t, p, s, min(n, 3), *a, **{**k, "n_tokens": 1}))  # fmt: skip
    code = main(args)  # an exception escaping main fails the test: that is a traceback
    out, err = capsys.readouterr()
    assert code in (0, 2), (args, code, err)
    assert err.count("\n") <= 2 and "Traceback" not in err + out, (args, err)
    if code == 2:
        assert err.startswith("error: ") and len(err.splitlines()[0]) <= len("error: ") + 300
    CASES["run"] += 1
    CASES[f"exit {code}"] += 1


def test_cli_fuzz_report():
    """Prints the number of generated cases (pytest -s shows it); runs after the fuzz test."""
    print(f"\nCLI fuzz: {CASES}")
    assert CASES["run"] == 0 or CASES["exit 0"] + CASES["exit 2"] == CASES["run"]
