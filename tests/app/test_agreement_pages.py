"""The lesson's measured speedup against the atlas's stored run of the same configuration: both figures with
their spreads, and "agree" exactly when the spreads overlap (Home's race and the shoot-out: their own tests)."""

import re

from conftest import open_page, shown

from specviz.teaching import lesson
from specviz.teaching.agreement import bench_figure
from ui.common import stored_bench


def test_lesson_speedup_against_the_stored_run():
    at = open_page("pages/lesson.py")
    while not at.button(key="lesson_next").disabled:  # to the step with the numbers, and past it
        at.button(key="lesson_next").click().run()
        assert not at.exception, at.exception
        said = [shown(c.value) for c in at.caption if "stored run measured" in shown(c.value)]
        if said:
            break
    assert said, "no step compares the lesson's speedup with the stored run"
    s = lesson.EXAMPLE
    stored = bench_figure(stored_bench(), s.drafter, s.temperature, s.k, s.k_auto, "stored")
    found = re.findall(r"([\d.]+)× \(([\d.]+)–([\d.]+)× over its \d+ runs\)", said[0])
    (b, b_lo, b_hi), (a, a_lo, a_hi) = [[float(x) for x in f] for f in found]
    assert (b, b_lo, b_hi) == (round(stored.speedup, 2), round(stored.low, 2), round(stored.high, 2))
    assert ("agree within" in said[0]) == (a_lo <= b_hi and b_lo <= a_hi), said[0]
