"""The README's real-model goal lines (benchmarks/readme_bench.py, issue 42) and the table's llm suite cell,
on made-up llm rows: met and not met are read from the rows, never written in."""

import importlib.util

import pytest

from specviz.bench.report import format_table
from tests.conftest import ROOT, bench_row

spec = importlib.util.spec_from_file_location("readme_bench", ROOT / "benchmarks" / "readme_bench.py")
readme_bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(readme_bench)


def llm_rows(best: float, peer_plain: tuple[float, float], lookup: float) -> list[dict]:
    """A real-model run: the repeat prompt's rows and the set's, ours at 20 tokens/s. ``best``: our prompt
    lookup's speedup on the repeat prompt; peer_plain: transformers' plain decoding's min and max over
    the repeats, as a fraction of ours; ``lookup``: transformers' prompt lookup on the repeat prompt."""
    base = bench_row() | {"suite": "llm", "model": "smollm2", "speedup_min": 1.0, "speedup_max": 1.0}

    def row(prompt, impl, drafter, speedup, lo=None, hi=None):
        return base | {"prompt": prompt, "impl": impl, "drafter": drafter, "speedup": speedup,
                       "tokens_per_s": 20 * speedup, "speedup_min": lo or speedup, "speedup_max": hi or speedup,
                       "tokens_per_forward": 2.0}  # fmt: skip

    lo, hi = peer_plain
    return [
        row("repeat", "specviz", "none", 1.0),
        row("repeat", "specviz", "prompt-lookup", best, best - 0.1, best + 0.1),
        row("repeat", "transformers", "prompt-lookup", lookup),
        row(None, "specviz", "none", 1.0),
        row(None, "transformers", "none", (lo + hi) / 2, lo, hi),
    ]


@pytest.mark.parametrize(
    ("best", "peer", "lookup", "verdicts"),
    [
        (1.7, (0.5, 0.6), 0.8, ["met", "met"]),
        (1.4, (0.5, 0.6), 0.8, ["met", "not met"]),  # under 1.5x
        (1.6, (0.5, 0.6), 1.7, ["met", "not met"]),  # behind transformers' prompt lookup
        (1.7, (0.95, 1.02), 0.8, ["not met", "met"]),  # transformers faster in one repeat
    ],
)
def test_the_real_model_goals_read_the_rows(best, peer, lookup, verdicts):
    lines = readme_bench.real_model_goals(llm_rows(best, peer, lookup)).splitlines()
    assert len(lines) == 2 and all(line.startswith("| smollm2") for line in lines)
    assert [line.rsplit("|", 2)[-2].strip() for line in lines] == verdicts
    assert f"prompt-lookup **{best:.2f}×**" in lines[1]


def test_no_real_model_rows_no_goal_lines_and_the_suite_cell_names_the_prompt():
    assert readme_bench.real_model_goals([bench_row()]) == ""
    table = format_table(llm_rows(1.7, (0.5, 0.6), 0.8)).splitlines()
    assert [line.split()[0] for line in table] == ["suite", *["llm/repeat"] * 3, *["llm/all"] * 2]


def batch_rows(auto_busy: float, auto_whole: float) -> list[dict]:
    """A character-model batch run at B = 4: plain decoding (A/A 0.97 busy, 0.98 whole), the trigram with
    adaptive K (drafting: 1.5 rows a sequence a pass), and EAGLE-3's adaptive row that never drafted."""
    base = bench_row() | {"suite": "batch", "batch": 4, "speedup_min": 1.0, "speedup_max": 1.0, "busy_min": 1.0,
                          "busy_max": 1.0, "rows_per_pass": 4.0, "aa_speedup": None, "aa_busy": None}  # fmt: skip
    return [
        base | {"drafter": "none", "speedup": 1.0, "busy_speedup": 1.0, "aa_speedup": 0.98, "aa_busy": 0.97},
        base
        | {
            "drafter": "trigram",
            "k_auto": True,
            "speedup": auto_whole,
            "busy_speedup": auto_busy,
            "rows_per_pass": 6.0,
        },
        base | {"drafter": "eagle3", "k_auto": True, "speedup": 0.99, "busy_speedup": 0.99},
    ]


@pytest.mark.parametrize(
    ("busy", "whole", "verdicts"),
    [(1.02, 0.95, ["met", "not met"]), (0.96, 0.99, ["not met", "met"]), (0.9651, 0.9749, ["met", "not met"])],
)  # the last: 0.9651 prints as 0.97, on the busy floor; 0.9749 prints as 0.97, under the whole floor's 0.98
def test_issue_44s_goal_reads_the_floor_from_the_run(busy, whole, verdicts):
    rows = batch_rows(busy, whole)
    got = [readme_bench.goal(rows, m) for m in ("busy", "whole")]
    assert [g[0] for g in got] == verdicts
    assert [g[1] for g in got] == ["0.97", "0.98"]  # the A/A's, under EAGLE-3's idle 0.99
    for (verdict, _, low), figure in zip(got, (busy, whole), strict=True):
        assert (low == [f"trigram at B = 4 ({figure:.2f}×, 1.00-1.00)"]) == (verdict == "not met")
    text = readme_bench.under_load(rows)
    assert (
        f"**{verdicts[0]}**" in text
        and f"Over the whole queue, the drain of the last requests included: {verdicts[1]}" in text
    )


def test_an_idle_row_never_sets_its_own_drafters_floor():
    """A drafter whose adaptive row never drafted is still judged (its idle rounds pay its upkeep), against the A/A
    pairs and the other drafters' idle rows, never its own."""
    rows = batch_rows(0.96, 0.99)
    rows[1] |= {"rows_per_pass": 4.0}  # the trigram's row never drafted: 0.96, under the A/A's 0.97
    verdict, floor, low = readme_bench.goal(rows, "busy")
    assert verdict == "not met" and floor == "0.96-0.97" and low == ["trigram at B = 4 (0.96×, 1.00-1.00)"]
    rows[1] |= {"busy_speedup": 0.97}
    assert readme_bench.goal(rows, "busy") == ("met", "0.97", [])  # EAGLE-3's floor: the A/A's 0.97 and 0.97


@pytest.mark.parametrize("verdict", ["tie", "faster", "slower"])
def test_issue_44s_goal_by_the_sign_test_names_the_slower_rows(verdict):
    """Rows with the busy sign test's verdicts: the goal is met unless an adaptive row is called slower, and the
    stricter floor's verdict follows it; rows of a run before the test (no verdicts) read the floor alone."""
    rows = batch_rows(0.96, 0.99)  # under the busy floor of 0.97
    for r in rows:
        r["repeats"], r["verdict"] = 15, "tie"
    rows[1]["verdict"] = verdict
    text = readme_bench.under_load(rows)
    said = "**not met**: trigram at B = 4 (0.96×)" if verdict == "slower" else "no adaptive row called slower: **met**."
    assert "By the sign test over each row's 15 repeats" in text and said in text
    assert "A/A pairs: tie)" in text and "Stricter, against the lowest median" in text
    assert "noise floor is the" not in text
    for r in rows:
        r["verdict"] = None
    text = readme_bench.under_load(rows)
    assert "sign test" not in text and "The noise floor is the lowest median" in text
