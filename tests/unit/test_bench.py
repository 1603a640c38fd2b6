"""The benchmark: rows consistent with what was run, greedy outputs identical to the baseline's,
the JSON-lines format round-trips, the transformers comparison runs the same algorithm, and the
CLI works end to end (and refuses bad input with one line, exit 2)."""

import gc
import json
import subprocess
import sys
from dataclasses import fields

import pytest
from conftest import ROOT

from specviz.adaptive.policy import AUTO_K_MAX
from specviz.bench import peer, timing
from specviz.bench.chart import bench_chart
from specviz.bench.report import VERDICT_P, format_table, paired_verdict, sign_test, verdict
from specviz.bench.rows import BenchRow, rows_from_jsonl, rows_to_jsonl
from specviz.bench.runner import lossy_methods, run_bench
from specviz.bench.timing import Run
from specviz.cli.main import main
from specviz.drafters import drafter_names
from specviz.teaching.presets import PRESETS
from specviz.verifiers import VERIFIERS

DRAFTERS = drafter_names()
TREE_DRAFTERS = drafter_names(tree=True)
SHAPED = drafter_names(shaped=True)
LOSSY = lossy_methods()

N = 16  # new tokens per prompt: enough for several rounds, short enough to be quick
CHAINS = [d for d in DRAFTERS[1:] if d not in TREE_DRAFTERS]  # the drafters block verification takes


@pytest.fixture(scope="module")
def bench(target, tiny):
    calls = []
    rows = run_bench(target, tiny, PRESETS[:2], max_new_tokens=N, repeats=3, progress=lambda *a: calls.append(a))
    return rows, calls


@pytest.mark.slow  # the bench fixture: a real bench run (~10 s on a quiet 2-core machine)
def test_rows_are_consistent(bench):
    rows, calls = bench
    names = [f.name for f in fields(BenchRow)]
    assert all(list(r) == names for r in rows)
    assert [(r["drafter"], r["temperature"]) for r in rows] == [(d, T) for T in (0.0, 0.8) for d in DRAFTERS]
    total = 3 * 2 * 2 * (len(DRAFTERS) + 1)  # repeats x temperatures x prompts x (drafters + the baseline again)
    assert calls == [(i, total) for i in range(1, total + 1)]
    for r in rows:
        assert r["impl"] == "specviz" and r["suite"] == "main" and r["k"] == 4 and r["repeats"] == 3
        assert r["prompts"] == 2 and r["new_tokens"] == N and r["tokens"] == 2 * N
        assert r["tokens_per_forward"] == pytest.approx(r["tokens"] / r["target_forwards"])
        assert 1 <= r["tokens_per_forward"] <= r["k"] + 1
        assert r["fraction_of_ideal"] == pytest.approx(r["speedup"] / r["tokens_per_forward"])
        assert r["tokens_per_s"] > 0 and r["seconds"] > 0 and r["speedup"] > 0
        assert r["draft_s"] >= 0 and r["verify_s"] > 0 and r["accept_s"] >= 0
        assert r["draft_s"] + r["verify_s"] + r["accept_s"] <= r["seconds"] * 1.5  # phases of the same runs
        base = next(b for b in rows if b["drafter"] == "none" and b["temperature"] == r["temperature"])
        per_forward = base["verify_s"] / base["target_forwards"]  # bookkeeping per round, in baseline forwards
        assert r["accept_cost"] == pytest.approx(r["accept_s"] / r["target_forwards"] / per_forward)
        if r["drafter"] == "none":
            # by construction: the baseline divided by itself, one token per forward pass, nothing drafted
            assert r["speedup"] == 1.0 and r["tokens_per_forward"] == 1.0 and r["fraction_of_ideal"] == 1.0
            assert r["acceptance_rate"] is None and r["draft_cost"] == 0.0
            assert r["verify_cost"] == pytest.approx(1.0)
            assert r["aa_speedup"] > 0  # the baseline timed twice (A/A): only noise keeps it from 1
        else:
            assert r["aa_speedup"] is None
            assert 0 <= r["acceptance_rate"] <= 1 and r["draft_cost"] >= 0 and r["verify_cost"] > 0
        # lossless: at temperature 0 every drafter emits exactly the baseline's tokens
        assert r["same_as_baseline"] is (True if r["temperature"] == 0 else None)
        # 2 prompts x 3 repeats = 6 pairs: a sign test cannot reach p < 0.01 on so few, so every row ties
        assert r["verdict"] == "tie" and sign_test(6, 0) > VERDICT_P and 0 < r["verdict_p"] <= 1
    by = {(r["drafter"], r["temperature"]): r for r in rows}
    # a forward pass of the tiny model costs far more than looking up the context
    assert by[("neural", 0.0)]["draft_cost"] > 5 * by[("prompt-lookup", 0.0)]["draft_cost"]
    assert by[("neural", 0.0)]["tokens_per_forward"] > 1.5  # the tiny model's drafts do get accepted


def test_sign_test_and_verdict():
    assert sign_test(0, 0) == 1.0 and sign_test(5, 5) == 1.0
    assert sign_test(10, 0) == sign_test(0, 10) == 2 / 1024
    assert sign_test(8, 2) == pytest.approx(2 * (45 + 10 + 1) / 1024)

    def runs(seconds):  # 3 repeats x 11 prompts
        return [[Run([], s, 1) for s in seconds[i * 11 : (i + 1) * 11]] for i in range(3)]

    base = runs([1.0] * 33)
    assert verdict(base, runs([0.9] * 33))[0] == "faster"
    assert verdict(base, runs([1.01] * 33))[0] == "slower"  # consistently slower, however little
    assert verdict(base, runs([0.9, 1.1] * 16 + [1.0]))[0] == "tie"  # as often faster as slower
    assert verdict(base, runs([0.5] * 20 + [1.05] * 13))[0] == "tie"  # 20 of 33: p = 0.30
    # the batch bench's pairs (costs a token while every slot was busy): 13 of 15 slower is called, 12 is not
    assert paired_verdict([(1.0, 1.1)] * 13 + [(1.0, 0.9)] * 2) == ("slower", pytest.approx(2 * 121 / 2**15))
    assert paired_verdict([(1.0, 1.1)] * 12 + [(1.0, 0.9)] * 3)[0] == "tie"


@pytest.mark.slow  # the bench fixture: a real bench run (~10 s on a quiet 2-core machine)
def test_rows_round_trip_through_json_lines(bench):
    rows, _ = bench
    text = rows_to_jsonl(rows)
    assert text.count("\n") == len(rows) and rows_from_jsonl(text) == rows
    assert rows_from_jsonl("\n" + text + "\n\n") == rows  # blank lines are ignored
    # a file from before the verification field: its rows were verified token-wise
    old = [{k: v for k, v in r.items()
            if k not in ("verification", "tau_same_lossless", "tau_same_block", "tau_same_traversal")}
           for r in rows]  # fmt: skip
    assert rows_from_jsonl(rows_to_jsonl(old)) == rows and "lossless" in format_table(old)
    older = [{k: v for k, v in r.items() if k not in ("cpu", "costs")} for r in rows]  # from before cpu and costs
    assert all(r["cpu"] is None and r["costs"] is None for r in rows_from_jsonl(rows_to_jsonl(older)))
    with pytest.raises(ValueError, match="line 2 is not JSON"):
        rows_from_jsonl(text.splitlines()[0] + "\n{oops\n")
    with pytest.raises(ValueError, match="line 1 is not a benchmark row: missing .*speedup"):
        rows_from_jsonl(json.dumps({"drafter": "none"}))


@pytest.mark.slow  # the bench fixture: a real bench run (~10 s on a quiet 2-core machine)
def test_table_and_chart(bench, tmp_path):
    rows, _ = bench
    table = format_table(rows).splitlines()
    assert len(table) == len(rows) + 1 and table[0].split()[:3] == ["suite", "impl", "drafter"]
    assert table[0].split()[3] == "verify" and table[1].split()[3] == "lossless"
    assert "1.00x" in table[1] and table[1].split()[7] == "-"  # the baseline: speedup 1, no acceptance
    md = format_table(rows, markdown=True).splitlines()
    assert md[0].startswith("| suite |") and set(md[1]) <= set("|-:") and len(md) == len(rows) + 2
    png = bench_chart(rows, tmp_path / "bench.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow  # bench runs of ours and of transformers' generate (~5 s)
def test_against_transformers_same_algorithm(target, monkeypatch):
    frozen, runs, quiet = [], [], timing.quiet_heap
    for module in (timing, peer):  # where our runs and transformers' look it up
        monkeypatch.setattr(module, "quiet_heap", lambda: quiet() or frozen.append(gc.get_freeze_count()))
    rows = run_bench(target, None, PRESETS[1:3], drafters=["prompt-lookup"], temperatures=[0.0], max_new_tokens=24,
                     repeats=3, transformers=True, progress=lambda done, total: runs.append(done))  # fmt: skip
    assert len(frozen) == len(runs) and min(frozen) > 0  # the heap was frozen before every timed run, theirs too
    assert gc.get_freeze_count() == 0  # and is given back unfrozen
    versus = {(r["impl"], r["drafter"]): r for r in rows if r["suite"] == "vs-transformers"}
    assert set(versus) == {(i, d) for i in ("specviz", "transformers") for d in ("none", "prompt-lookup")}
    for r in versus.values():
        assert r["same_as_baseline"] is True  # the exported weights decode greedily exactly as ours do
        assert r["new_tokens"] == 24 and r["tokens"] == 48 and r["temperature"] == 0.0
    assert versus[("transformers", "none")]["version"].startswith("transformers ")
    assert versus[("transformers", "none")]["tokens_per_forward"] == 1.0
    # transformers' prompt lookup proposes what ours does: the same number of forward passes
    ours, theirs = versus[("specviz", "prompt-lookup")], versus[("transformers", "prompt-lookup")]
    assert ours["target_forwards"] == theirs["target_forwards"] < ours["tokens"]
    assert theirs["draft_cost"] is None and theirs["fraction_of_ideal"] is None


@pytest.mark.slow  # the CLI's bench in a subprocess (~18 s)
def test_cli_bench_quick_json_smoke():
    """CI's smoke test: the quick prompt set through the CLI, JSON lines on stdout (one repeat of 16 tokens, to be quick)."""
    proc = subprocess.run([sys.executable, "-m", "specviz", "bench", "--quick", "--json", "--repeats", "1",
                           "--max-new-tokens", "16"],
                          cwd=ROOT, capture_output=True, text=True, timeout=1800)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = rows_from_jsonl(proc.stdout)
    main_rows = [r for r in rows if r["suite"] == "main"]
    fixed = [r for r in main_rows if not r["k_auto"] and r["verification"] == "lossless"]
    auto = [r for r in main_rows if r["k_auto"]]
    assert len(fixed) == 2 * len(DRAFTERS) and all(r["k"] == 4 for r in fixed)
    # every chain drafter once more with block verification, at K = 4, sampled only (greedy is the same match)
    block = [r for r in main_rows if r["verification"] == "block"]
    assert [(r["drafter"], r["temperature"], r["k"]) for r in block] == [(d, 0.8, 4) for d in CHAINS]
    assert all(1 <= r["tau_same_lossless"] <= 5 and 1 <= r["tau_same_block"] <= 5 for r in block)
    assert all(r["tau_same_block"] is None for r in fixed + auto)
    # every tree drafter once more with traversal verification, the same way, on its own drafts under both rules
    traversal = [r for r in main_rows if r["verification"] == "traversal"]
    assert [(r["drafter"], r["temperature"], r["k"]) for r in traversal] == [(d, 0.8, 4) for d in TREE_DRAFTERS]
    assert all(1 <= r["tau_same_lossless"] <= 5 and 1 <= r["tau_same_traversal"] <= 5 for r in traversal)
    assert all(r["tau_same_traversal"] is None for r in fixed + auto + block)
    # the atlas's lossy methods (NASD's own rule, Medusa's typical acceptance, FLy...) once each, sampled only
    lossy = [r for r in main_rows if r["verification"] in {rule for _, rule in LOSSY}]
    assert sorted((r["drafter"], r["verification"], r["temperature"], r["k"]) for r in lossy) == sorted(
        (d, rule, 0.8, 4) for d, rule in LOSSY
    )
    assert {rule for _, rule in LOSSY} >= {"nasd-seed", "typical", "fly"} and not any(
        VERIFIERS[r].lossless for _, r in LOSSY
    )
    # every drafter but the baseline once more in its default configuration: adaptive K
    assert sorted((r["drafter"], r["temperature"]) for r in auto) == sorted(
        (d, T) for d in DRAFTERS[1:] for T in (0.0, 0.8)
    )
    assert all(r["k"] == AUTO_K_MAX and r["threads"] == 1 and r["load_average"] >= 0 for r in auto)
    # the adaptive-K rows say which cost curve priced their drafts: this machine's, measured first
    assert all(r["costs"].startswith("measured on ") and "v(2)" in r["costs"] for r in auto)
    assert all(r["costs"] is None for r in fixed + block + traversal + lossy)
    assert all(isinstance(r["cpu"], str) and r["cpu"] for r in rows)  # figures differ from one CPU to another
    assert all(r["prompts"] == 3 and r["new_tokens"] == 16 for r in main_rows)
    # every drafter with the trait shaped once more with Sequoia's tree shape, at both temperatures, among the
    # main suite's runs (its baseline) but in a suite of its own, so the main suite keeps one row per drafter
    shaped = [r for r in rows if r["suite"] == "sequoia"]
    assert sorted((r["drafter"], r["temperature"], r["k"], r["k_auto"]) for r in shaped) == sorted(
        (d, T, 4, False) for d in SHAPED for T in (0.0, 0.8)
    )
    assert all(r["same_as_baseline"] is (True if r["temperature"] == 0 else None) for r in shaped)
    assert all(1 <= r["tokens_per_forward"] <= 5 and r["draft_cost"] > 0 and r["speedup"] > 0 for r in shaped)
    assert {r["impl"] for r in rows} == {"specviz", "transformers"}  # transformers is a dev dependency
    assert "Traceback" not in proc.stderr


@pytest.mark.slow  # a bench run through the CLI (~5 s)
def test_cli_bench_table_and_out(capsys, tmp_path):
    out = tmp_path / "rows.jsonl"
    argv = ["bench", "--quick", "--no-transformers", "--no-auto", "--repeats", "1", "--max-new-tokens", "4",
            "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert text.startswith("suite") and "prompt-lookup" in text and f"wrote {out}" in text
    rows = rows_from_jsonl(out.read_text())
    assert len(rows) == 2 * len(DRAFTERS) + len(CHAINS) + len(TREE_DRAFTERS) + len(LOSSY) + 2 * len(SHAPED)
    assert all(r["impl"] == "specviz" and r["new_tokens"] == 4 for r in rows)
    assert any(line.split()[2:4] == ["trigram", "block"] for line in text.splitlines())
    assert any(line.split()[2:4] == ["trie", "traversal"] for line in text.splitlines())
    assert sum(line.split()[:1] == ["sequoia"] for line in text.splitlines()) == 2 * len(SHAPED)
    png = tmp_path / "chart.png"
    assert main(["bench-chart", str(out), str(png)]) == 0 and png.stat().st_size > 0


@pytest.mark.parametrize(
    "argv, message",
    [
        (["bench", "--k", "0"], "K must be between 1 and 32"),
        (["bench", "--k", "33"], "K must be between 1 and 32"),
        (["bench", "--k", "four"], "invalid int value"),  # bench's --k is the fixed rows' K: a number
        (["bench", "--repeats", "0"], "--repeats must be between 1 and 100"),
        (["bench", "--max-new-tokens", "0"], "between 1 and 4096"),
        (["bench", "--threads", "0"], "--threads must be between 1 and 256"),
        (["bench", "--out", "."], ". is a folder, not a file"),
        (["bench-chart", "missing.jsonl", "x.png"], "cannot read missing.jsonl"),
        (["bench-chart", "README.md", "x.png"], "README.md: line 1 is not JSON"),
    ],
)
def test_bench_bad_input_one_line_exit_2(capsys, argv, message):
    code, (out, err) = main(argv), capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err
