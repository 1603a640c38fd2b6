"""Pages that show the same configuration agree within the run-to-run spread they state, or say why not
(specviz/teaching/agreement.py): the verdicts on agreeing and disagreeing figures, and the stored run's rows."""

import json
from pathlib import Path

import pytest

from specviz.teaching.agreement import Figure, agree, bench_figure, race_figure, reasons, sentence, tally
from specviz.teaching.race import Lane

HERE = "AMD EPYC (family 25, model 17, AVX-512)"
ROWS = [json.loads(line) for line in (Path(__file__).resolve().parents[2] / "docs" / "bench.jsonl").open()]


def fig(speedup, low, high, cpu=HERE, text="11 prompts × 256 characters", where="the atlas's stored run"):
    return Figure(where, speedup, low, high, 3, cpu, text)


def test_overlapping_spreads_agree():
    race, stored = fig(1.95, 1.85, 2.05, where="this race"), fig(2.09, 2.00, 2.18)
    assert agree(race, stored) and agree(stored, race)
    assert sentence(race, stored).endswith("The two agree within their run-to-run spread.")


@pytest.mark.parametrize(
    ("stored", "says"),
    [
        (fig(2.34, 2.30, 2.40, cpu="AMD EPYC (family 26, model 2, AVX-512)"), "ran on another CPU"),
        (fig(2.34, 2.30, 2.40, text="1 prompt × 200 characters"), "decoded other text"),
        (fig(2.34, 2.30, 2.40), "the machine's load changed"),
    ],
)
def test_disjoint_spreads_disagree_and_say_why(stored, says):
    """The issue's example: Home's race at 1.92× against the atlas's 2.34×."""
    race = fig(1.92, 1.85, 2.00, where="this race")
    assert not agree(race, stored)
    text = sentence(race, stored)
    assert says in text and "agree within" not in text, text
    assert "1.92× (1.85–2.00× over its 3 runs)" in text and "2.34× (2.30–2.40× over its 3 runs)" in text
    assert bool(reasons(race, stored)) == (says != "the machine's load changed")


def test_edges_touching_agree():
    assert agree(fig(1.0, 0.9, 1.1), fig(1.2, 1.1, 1.3)) and not agree(fig(1.0, 0.9, 1.1), fig(1.2, 1.11, 1.3))


def test_edges_that_touch_as_shown_agree():
    """The verdict reads the figures the sentence prints: 2.2799 and 2.2801 both show as 2.28, and a range
    printed as ending where the other begins agrees (a suite run once saw 'differ' beside 2.05–2.28 and
    2.28–2.54)."""
    race, stored = fig(2.16, 2.05, 2.2799, where="this race"), fig(2.34, 2.2801, 2.54)
    assert agree(race, stored) and agree(stored, race)
    assert sentence(race, stored).endswith("The two agree within their run-to-run spread.")
    assert not agree(race, fig(2.34, 2.2851, 2.54))  # shows as 2.29: apart


def test_bench_figure_is_the_stored_row():
    """The stored run's figure for the race's configuration (distilled, T = 0, adaptive K) is the row the atlas
    shows, with the min and max of its repeats; a fixed K the run did not use, or a temperature it did not run,
    has none."""
    row = next(r for r in ROWS if (r["suite"], r["drafter"], r["temperature"], r["k_auto"], r["verification"])
               == ("main", "distilled", 0.0, True, "lossless"))  # fmt: skip
    f = bench_figure(ROWS, "distilled", 0.0, 12, True, "the atlas's stored run")
    assert (f.speedup, f.low, f.high, f.runs, f.cpu) == (row["speedup"], row["speedup_min"], row["speedup_max"],
                                                         row["repeats"], row["cpu"])  # fmt: skip
    assert f.low <= f.speedup <= f.high
    assert bench_figure(ROWS, "distilled", 0.0, 7, False, "x") is None  # the run's fixed K is 4
    assert bench_figure(ROWS, "distilled", 0.5, 12, True, "x") is None
    assert bench_figure(ROWS, "trigram", 0.8, 4, False, "x").speedup == next(
        r["speedup"] for r in ROWS if (r["suite"], r["drafter"], r["temperature"], r["k_auto"], r["verification"])
        == ("main", "trigram", 0.8, False, "lossless"))  # fmt: skip


def test_race_figure_from_its_lanes():
    plain = Lane("p", [0.1, 0.2], ["a", "b"], ["plain"] * 2, runs=[0.21, 0.20, 0.19])
    spec = Lane("s", [0.1], ["ab"], ["accepted"], runs=[0.10, 0.105, 0.08])
    f = race_figure(plain, spec, HERE, "the race's prompt × 2 characters")
    assert f.speedup == pytest.approx(2.0) and f.runs == 3
    assert (f.low, f.high) == pytest.approx((0.20 / 0.105, 0.19 / 0.08))
    no_runs = Lane("s", [0.1], ["a"], ["plain"])
    assert race_figure(no_runs, no_runs, HERE, "x") is None  # no repeats: no spread


def test_tally_counts_and_names_the_drafters_that_differ():
    stored = fig(2.0, 1.9, 2.1)
    here = fig(2.0, 1.95, 2.05, text="1 prompt × 100 characters", where="this run")
    far = fig(1.2, 1.1, 1.3, text="1 prompt × 100 characters", where="this run")
    text = tally([("distilled", here, stored), ("trigram", far, stored)])
    assert text.startswith("Against the atlas's stored run at the same K and temperature: 1 of 2 drafters agree")
    assert "differ: trigram (1.20× here, 2.00× stored)" in text and "distilled (" not in text
    assert "decoded other text" in text
    assert tally([("distilled", here, stored)]).endswith("1 of 1 drafters agree within both run-to-run spreads.")
    assert tally([]) == ""
