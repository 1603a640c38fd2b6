"""The class benchmark (benchmarks/class_size.py) runs: two browser students on one server. It
asserts what it measured is well formed, never how fast it was (speed is for benchmarks)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import class_size  # noqa: E402


def test_two_students_step_through_one_shared_run():
    res = class_size.measure(students=2, steps=2, think=0.2, pin=False)
    assert res["clicks"] == 4
    assert 0 < res["p50_s"] <= res["p95_s"] <= res["max_s"]
    assert res["server_rss_peak_mb"] > 100  # the models are loaded in the server
