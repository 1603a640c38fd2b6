"""The race: lanes replay the engine's own timings; the block escapes text; Home shows it."""

import json
import re

from specviz.core.engine import Generation
from specviz.core.settings import Settings
from specviz.teaching.race import Lane, lane, race, race_html, spread, spread_sentence


def test_a_lane_replays_the_rounds_at_their_measured_times(target):
    prompt = target.tokenizer.encode("ROMEO:\n")
    trace = Generation(target, prompt, Settings(drafter="distilled", temperature=0, max_new_tokens=60)).run()
    ln = lane(trace, "x")
    assert ln.chars == trace.text and len(ln.times) == len(ln.kinds) == 60
    assert all(a <= b for a, b in zip(ln.times, ln.times[1:], strict=False))
    ends, t = [], 0.0
    for r in trace.rounds:  # every token of a round appears when the round ends
        t += r.draft_s + r.verify_s + r.accept_s
        ends += [t] * len(r.emitted)
    assert ln.times == ends and ln.seconds == t
    assert set(ln.kinds) <= {"accepted", "correction", "bonus"} and "accepted" in ln.kinds


def test_greedy_race_writes_the_same_characters(target):
    plain, spec = race(target, target.tokenizer.encode("ROMEO:\n"), Settings(drafter="trigram", temperature=0,
                                                                             max_new_tokens=40), repeats=2)  # fmt: skip
    assert plain.chars == spec.chars and set(plain.kinds) == {"plain"}
    assert plain.label == "Plain decoding" and "trigram" in spec.label
    # each lane keeps its repeats' seconds and is the median one (median_low of two: the faster)
    assert (
        len(plain.runs) == len(spec.runs) == 2 and plain.seconds == min(plain.runs) and spec.seconds == min(spec.runs)
    )
    lo, hi = spread(plain, spec)
    assert lo == min(a / b for a, b in zip(plain.runs, spec.runs, strict=True)) <= hi
    assert f"{lo:.2f}× to {hi:.2f}×" in spread_sentence(plain, spec)
    data = json.loads(re.search(r"const D = (.*);\n", race_html("x", plain, spec)).group(1))
    assert data["span"] == f" (its 2 runs: {lo:.2f}× to {hi:.2f}×)"


def test_race_block_embeds_text_safely():
    evil = "</script><b>x</b> & $x$"
    a = Lane("Plain decoding", [0.1, 0.2], "<b", ["plain", "plain"])
    b = Lane("Speculative", [0.15, 0.15], "<b", ["accepted", "bonus"])
    page = race_html(evil, a, b)
    data = json.loads(re.search(r"const D = (.*);\n", page).group(1))
    assert data["prompt"] == evil and data["same"] == "the same characters"
    assert "</script><b>" not in page and data["slow"] == 8.0 / 0.2
    assert "innerHTML" not in page  # text goes in through textContent only
