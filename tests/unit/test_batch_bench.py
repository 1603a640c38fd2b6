"""The batch bench (specviz/bench/batch.py), its roofline (specviz/bench/roofline.py) and its charts: what
the rows hold and how the crossover is read off them; the roofline's arithmetic against hand-worked
figures; the CLI's --batch. No timing is asserted: speed is what the bench reports, never a test."""

import itertools
import math
import random

import plotly.graph_objects as go
import pytest

from specviz.bench.batch import WAVES, batch_run, batch_table, crossover, interleaved, run_batch_bench, served
from specviz.bench.roofline import (
    NEVER_PAID,
    Roofline,
    predicted_crossover,
    predicted_speedup,
    roofline,
    roofline_lines,
)
from specviz.bench.rows import rows_from_jsonl, rows_to_jsonl
from specviz.charts.batch import LABEL_GAP, NOTE_LINE, crossover_figure, roofline_figure
from specviz.cli.main import main
from specviz.drafters import BASELINE


def fake(drafter, pts):
    return [{"suite": "batch", "drafter": drafter, "batch": b, "speedup": s, "speedup_min": s - 0.1,
             "speedup_max": s + 0.1, "tokens_per_forward": 2.0, "rows_per_pass": b * 5.0} for b, s in pts]  # fmt: skip


def test_crossover_is_where_the_speedup_falls_through_one():
    rows = fake("a", [(1, 2.0), (2, 1.5), (4, 0.8), (8, 0.5)]) + fake("b", [(1, 1.2), (2, 1.1)])
    assert crossover(rows, "a") == pytest.approx(2 ** (1 + 0.5 / 0.7))  # log2 B interpolated between 2 and 4
    assert crossover(rows, "b") is None  # never fell
    assert crossover(fake("c", [(1, 0.9), (2, 0.8)]), "c") is None  # never paid


ROOF = Roofline(peak_flops=100e9, bandwidth=10e9, weight_bytes=12_000_000, weight_params=3_000_000,
                kv_bytes_per_entry=8192, attn_flops_per_entry=4096)  # fmt: skip


def test_the_roofline_by_hand():
    assert ROOF.ridge == 10.0
    # one row, one sequence, 100 entries: 6.41 Mflop over 12.82 MB, memory-bound: 1.282 ms
    assert ROOF.flops(1, 1, 100) == 2 * 3_000_000 + 409_600 and ROOF.bytes(1, 1, 100) == 12_819_200
    assert ROOF.seconds(1, 1, 100) == pytest.approx(12_819_200 / 10e9)
    assert ROOF.seconds(5, 1, 100) == ROOF.seconds(1, 1, 100)  # 5 rows: still the weights' time
    big = ROOF.seconds(1000, 1, 100)  # 1000 rows: the arithmetic's time
    assert big == pytest.approx(1000 * 6_409_600 / 100e9) and big > ROOF.bytes(1000, 1, 100) / 10e9
    assert ROOF.intensity(20, 1, 100) == pytest.approx(20 * ROOF.intensity(1, 1, 100))


def test_predicted_speedup_falls_with_the_batch():
    # memory-bound at B = 1 and no CPU beside the pass: the whole of tau
    assert predicted_speedup(ROOF, 1, 5.0, 3.0, 100, 0.0, 0.0) == pytest.approx(3.0)
    s = [predicted_speedup(ROOF, B, 5.0, 3.0, 100, 0.0, 0.0) for B in (1, 4, 16, 64, 256)]
    assert s == sorted(s, reverse=True) and s[-1] < 1  # compute-bound at 256 x 5 rows: tau / 5 < 1
    b = predicted_crossover(ROOF, 5.0, 3.0, 100, 0.0, 0.0)
    assert b is not None and predicted_speedup(ROOF, math.floor(b), 5.0, 3.0, 100, 0.0, 0.0) >= 1
    assert predicted_speedup(ROOF, math.ceil(b), 5.0, 3.0, 100, 0.0, 0.0) < 1
    assert predicted_crossover(ROOF, 5.0, 0.9, 100, 0.0, 0.0) == NEVER_PAID  # tau below 1
    assert predicted_crossover(ROOF, 1.0, 3.0, 100, 0.0, 0.0) is None  # no extra rows: never falls


def test_the_bench_rows(target, tiny):
    drafters = ("trigram", "eagle3")  # a table and a neural head on the target's features
    rows = run_batch_bench(target, tiny, batches=(1, 3), drafters=drafters, max_new_tokens=6, repeats=1)
    assert [(r["batch"], r["drafter"]) for r in rows] == [(b, d) for b in (1, 3) for d in (BASELINE, *drafters)]
    assert rows_from_jsonl(rows_to_jsonl(rows)) == rows  # valid BenchRows
    for r in rows:
        assert r["suite"] == "batch" and r["same_as_baseline"] is True  # T = 0: the same tokens as plain decoding
        assert r["tokens"] == 6 * r["batch"] * WAVES and r["prompts"] == r["batch"] and r["waves"] == WAVES
        if r["drafter"] == BASELINE:
            assert r["speedup"] == 1.0 and r["rows_per_pass"] == r["batch"] and r["tokens_per_forward"] == 1.0
            assert r["aa_speedup"] > 0 and r["aa_speedup"] != 1.0  # its second run, timed apart
            assert r["busy_speedup"] == 1.0 and r["aa_busy"] > 0 and r["aa_busy"] != 1.0
        else:
            assert r["rows_per_pass"] > r["batch"] and r["tokens_per_forward"] > 1 and r["aa_speedup"] is None
            assert r["busy_min"] <= r["busy_speedup"] <= r["busy_max"] and r["aa_busy"] is None
        assert r["verdict"] == "tie" and r["verdict_p"] == 1.0  # one pair: the sign test cannot call it
    table = batch_table(rows)
    assert "3  eagle3" in table and "(A/A, what noise alone gives): B=1 " in table and "(busy " in table
    assert "vs plain" in table.splitlines()[0] and "over the 1 pairs; plain decoding's row: its A/A pairs" in table
    auto = [dict(r, k_auto=True, rows_per_pass=float(r["batch"])) for r in rows if r["drafter"] != BASELINE]
    lines = roofline_lines(roofline(target.model, peak=100e9, bandwidth=10e9), rows + auto, 150.0)
    b1 = next(x for x in lines if x.startswith("  B = 1:"))
    assert b1.count("trigram") == 1 and "trigram 0.5" not in b1  # the fixed-K row's passes, not adaptive K's
    assert lines[0].startswith("roofline: peak 100.0 Gflop/s") and sum("crossover predicted" in x for x in lines) == 2
    assert sum("predicted passes only / with CPU / measured: B=1 " in x for x in lines) == 2


def test_interleaved_batches_are_each_charged_their_own_rounds(target, tiny):
    """Batches run round by round share one clock; each is charged only the time inside its own rounds. A fake
    clock that moves only in a pass, by a step set per batch, makes that exact; and interleaving changes no
    output (each batch decodes what it decodes alone)."""
    prompts = [target.tokenizer.encode(t) for t in ("ROMEO:\nBut soft", "First Citizen:\nWe are")]
    configs = [(BASELINE, 4, False), ("trigram", 3, False), (BASELINE, 4, False)]
    made = [served(target, tiny, prompts, c, 2, 0.0, 7, 0, None, 2) for c in configs]
    now = [0.0]
    for (batch, _), step in zip(made, (3.0, 7.0, 11.0), strict=True):
        batch.clock = lambda: now[0]
        forward = batch.forward

        def ticking(targets, passes, forward=forward, step=step):
            now[0] += step
            return forward(targets, passes)

        batch.forward = ticking
    runs = interleaved(made, random.Random(0))
    for (batch, _), run, step, c in zip(made, runs, (3.0, 7.0, 11.0), configs, strict=True):
        assert run["seconds"] == step * batch.passes and run["pass_s"] == run["seconds"]
        busy_passes = run["busy_s"] / step  # the rounds up to the first slot left idle, each charged its step
        assert busy_passes == int(busy_passes) and 0 < busy_passes <= batch.passes
        assert run["outputs"] == batch_run(target, tiny, prompts, c, 2, 0.0, 7, 0, None, 2)["outputs"]
    assert runs[1]["passes"] < runs[0]["passes"] == runs[2]["passes"]  # the trigram drafted: fewer passes
    assert runs[0]["busy_s"] == runs[0]["seconds"]  # plain decoding's sequences all finish in the same round


def test_the_charts_are_valid_plotly():
    rows = fake("a", [(1, 2.0), (2, 1.5), (4, 0.8)]) + fake(BASELINE, [(1, 1.0), (2, 1.0), (4, 1.0)])
    fig = crossover_figure(rows)
    go.Figure(fig.to_dict())
    marks = [t for t in fig.data if t.name == "a: crossover"]
    assert len(marks) == 1 and marks[0].x[0] == pytest.approx(crossover(rows, "a"))
    # named with its B in the corner's note, one line a crossover
    (note,) = fig.layout.annotations
    assert note.text == f"× crossover<br>a: B ≈ {crossover(rows, 'a'):.0f}"
    # above the plot, in a top margin that holds its lines: inside it, a fast drafter's bars can reach any corner
    assert note.yref == "paper" and note.y == 1 and note.yanchor == "bottom"
    assert fig.layout.margin.t >= NOTE_LINE * note.text.count("<br>") + NOTE_LINE
    assert [t.name for t in fig.data if t.mode == "lines+markers"] == ["a"]  # plain decoding is the 1.0 line
    auto = [dict(r, k_auto=True, speedup=1.0) for r in fake("a", [(1, 1.5), (4, 1.0)])]
    fig = crossover_figure(rows + auto)
    go.Figure(fig.to_dict())
    assert [t.name for t in fig.data if t.mode == "lines+markers"] == ["a, adaptive K", "a"]
    assert len([t for t in fig.data if t.name == "a: crossover"]) == 1  # the fixed-K line's, not the adaptive one's
    # a real model's name (a user's folder path) is shown as typed in the legend and the corner's note
    named = [dict(r, model="<b>m</b>") for r in rows]
    fig = crossover_figure(named)
    assert "a (&lt;b&gt;m&lt;/b&gt;)" in [t.name for t in fig.data] and "<b>m" not in fig.layout.annotations[0].text
    # ... and in hover text, read from the trace's meta: a "%{y}" in a folder's name is not a template field there
    fig = crossover_figure([dict(r, model="%{y}") for r in rows + auto])
    hovered = [t for t in fig.data if t.hovertemplate]
    assert len(hovered) == 3 and all(t.meta == "a (%{y})" and t.hovertemplate.startswith("%{meta}") for t in hovered)
    roof = roofline_figure(ROOF, rows, 100.0)
    go.Figure(roof.to_dict())
    # B written beside plain decoding's points only, a quarter of a decade apart at least; hover names every B
    assert all(not any(t.text) for t in roof.data if t.name not in ("plain decoding", "roofline"))
    assert list(next(t for t in roof.data if t.name == "a").customdata) == [1, 2, 4]
    busy = fake(BASELINE, [(b, 1.0) for b in (1, 2, 4, 8, 16, 32, 64)])  # passes bunching up at the ridge
    (plain,) = [t for t in roofline_figure(ROOF, busy, 100.0).data if t.name == "plain decoding"]
    shown = [math.log10(x) for x, t in zip(plain.x, plain.text, strict=True) if t]
    assert plain.text[:3] == ("B=1", "B=2", "B=4") and "" in plain.text
    assert all(b - a >= LABEL_GAP for a, b in itertools.pairwise(shown))
    assert "No batch bench rows" in str(crossover_figure([]).to_dict())


@pytest.mark.parametrize("flag", ["1,x", "0,4", "", "4,300"])
def test_bad_batch_sizes_are_one_line(capsys, flag):
    code = main(["bench", "--batch", flag])
    _, err = capsys.readouterr()
    assert code == 2 and err.startswith("error: --batch") and err.count("\n") == 1


@pytest.mark.slow  # measures this machine's batched rounds once (~20-40 s), then kept in the tests' cache
def test_the_cli_prices_adaptive_k_on_the_measured_rounds(capsys, tmp_path):
    out = tmp_path / "rows.jsonl"
    code = main(["bench", "--batch", "1,2", "--max-new-tokens", "4", "--repeats", "1", "--out", str(out)])
    assert code in (0, None), capsys.readouterr().err
    rows = rows_from_jsonl(out.read_text())
    auto = [r for r in rows if r["k_auto"]]
    assert {r["drafter"] for r in auto} == {"trigram", "distilled", "eagle3"} and all(
        r["same_as_baseline"] for r in auto
    )
    for r in auto:  # priced on the rounds measured here and on the drafting measured here, and it says so
        assert "under load measured on" in r["costs"] and "drafting here" in r["costs"], r["costs"]
    assert all(r["version"].endswith("timed in thread CPU time)") for r in rows)  # --threads 1 by default
    out.unlink()  # --drafters picks the batch bench's drafters too (the load curve is kept from the run above)
    code = main(["bench", "--batch", "1", "--drafters", "trigram", "--max-new-tokens", "4", "--repeats", "1",
                 "--out", str(out)])  # fmt: skip
    assert code in (0, None), capsys.readouterr().err
    rows = rows_from_jsonl(out.read_text())
    assert [(r["drafter"], r["k_auto"]) for r in rows] == [("none", False), ("trigram", False), ("trigram", True)]
