"""What a start keeps on disk for the next (specviz/core/diskcache.py): the verify-cost curve, read back
as measured and measured again when its key changes or its file is damaged; and the kernels' library,
loaded from the cache and built again when a source changes. Each test uses a folder of its own."""

import shutil
import threading

import pytest

from specviz.adaptive import costs
from specviz.adaptive.costs import N_MAX, CostCurve, interpolate
from specviz.core.diskcache import kept_or_made
from specviz.kernels import native


@pytest.fixture
def counted(monkeypatch):
    """A stand-in for measure: a made-up curve per call, and the number of calls."""
    calls = []

    def measure_now() -> CostCurve:
        calls.append(1)
        return CostCurve(
            interpolate({1: 1.0, 2: 1.1 + len(calls) / 100, 9: 1.7, 64: 4.25}), "measured on a CPU, 1 thread"
        )

    return measure_now, calls


def test_a_kept_curve_reads_back_as_measured_and_says_when(target, tmp_path, counted):
    measure_now, calls = counted
    first = costs.kept_curve(target, measure_now, tmp_path)
    assert len(calls) == 1 and first.source == "measured on a CPU, 1 thread"  # measured now: said as measured
    (kept,) = tmp_path.glob("*.json")
    again = costs.kept_curve(target, measure_now, tmp_path)
    assert len(calls) == 1 and again.verify == first.verify and len(again.verify) == N_MAX  # read, not measured
    # the figures are the measured ones, and the source says they were measured then, not now
    assert again.source.startswith("measured on a CPU, 1 thread, on ") and again.source.endswith("(kept from then)")
    assert not list(tmp_path.glob("*.tmp"))


def test_a_changed_key_measures_again(target, tmp_path, counted, monkeypatch):
    measure_now, calls = counted
    costs.kept_curve(target, measure_now, tmp_path)
    monkeypatch.setattr(costs, "cpu_name", lambda: "Another CPU (family 1, model 2, AVX2)")
    other = costs.kept_curve(target, measure_now, tmp_path)
    assert len(calls) == 2 and other.source == "measured on a CPU, 1 thread"
    monkeypatch.setattr(costs.torch, "get_num_threads", lambda: 2)
    costs.kept_curve(target, measure_now, tmp_path)
    monkeypatch.setattr(costs, "PASS_CODE", costs.PASS_CODE[1:])  # the code of a pass changed
    costs.kept_curve(target, measure_now, tmp_path)
    assert len(calls) == 4 and len(list(tmp_path.glob("*.json"))) == 4
    monkeypatch.undo()
    costs.kept_curve(target, measure_now, tmp_path)  # back on the first key: its file
    assert len(calls) == 4


@pytest.mark.parametrize("damage", ["", "{not json", '{"verify": [1.0]}', "[]", "null", "bad key"])
def test_a_damaged_file_is_measured_again(target, tmp_path, counted, damage):
    measure_now, calls = counted
    costs.kept_curve(target, measure_now, tmp_path)
    (kept,) = tmp_path.glob("*.json")
    if damage == "bad key":  # a whole record, for another key under this key's name
        damage = kept.read_text().replace('"threads": ', '"threads": 1', 1)
    kept.write_text(damage)
    curve = costs.kept_curve(target, measure_now, tmp_path)
    assert len(calls) == 2 and curve.source == "measured on a CPU, 1 thread"
    assert costs.read_curve(kept, costs.curve_key(target)).verify == curve.verify  # and kept in its place


def test_one_maker_at_a_time_and_the_second_reads_the_first(tmp_path):
    """Two makers of the same file at once (two test workers, two servers): the second waits for the first's
    lock, then reads what it wrote, and never makes one itself. flock locks are per open file, so two threads
    contend as two processes do. Without the lock the second would make its own while the first is held."""
    path = tmp_path / "curve.json"
    read = lambda: path.read_text() if path.exists() else None  # noqa: E731
    started, go, made, got = threading.Event(), threading.Event(), [], {}

    def first_make():
        started.set()
        go.wait(10)
        made.append("first")
        return "first's"

    def second_make():
        made.append("second")
        return "second's"

    def run(name, make):
        got[name] = kept_or_made(path, read, make, str.encode)

    first = threading.Thread(target=run, args=("first", first_make))
    first.start()
    assert started.wait(10)
    second = threading.Thread(target=run, args=("second", second_make))
    second.start()
    second.join(0.5)  # an unlocked second would be done by now, having made its own
    waited = second.is_alive()
    go.set()
    first.join(10)
    second.join(10)
    assert waited and made == ["first"] and got == {"first": "first's", "second": "first's"}
    assert kept_or_made(path, read, second_make, str.encode) == "first's" and made == ["first"]


def test_the_kernels_are_kept_and_built_again_when_a_source_changes(tmp_path, monkeypatch):
    cxx = native.compiler()
    if cxx is None or native.kernel() is None:
        pytest.skip(native.backend())
    src = tmp_path / "src"
    src.mkdir()
    for path in [*native.SOURCES, *native.HERE.glob("*.h")]:
        shutil.copy(path, src / path.name)
    sources = {src / path.name: rule for path, rule in native.SOURCES.items()}
    flags = ("-O0", "-std=c++17", "-fPIC")  # quick to build: what is tested is the cache
    builds = []
    build = native.compile_library
    monkeypatch.setattr(native, "compile_library", lambda *a, **k: builds.append(a) or build(*a, **k))
    cache = tmp_path / "cache"
    lib, line = native.load_or_build(cxx, cache, sources, flags)
    assert lib is not None and len(builds) == 1 and line.startswith("few-rows kernels")
    (kept,) = cache.glob("*.so")
    lib, again = native.load_or_build(cxx, cache, sources, flags)  # a later start: loaded from the cache
    assert len(builds) == 1 and again == line and lib.linear_panel_bytes() in (64, 128)
    header = src / "vec.h"
    header.write_text(header.read_text() + "\n// changed\n")  # an included header counts as a source
    lib, _ = native.load_or_build(cxx, cache, sources, flags)
    assert lib is not None and len(builds) == 2 and len(list(cache.glob("*.so"))) == 2
    assert not [p for p in cache.iterdir() if p.suffix != ".so"]  # no temporary file left behind


def test_a_cache_folder_that_cannot_be_written_builds_for_this_process_only(tmp_path):
    cxx = native.compiler()
    if cxx is None or native.kernel() is None:
        pytest.skip(native.backend())
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache folder would be")
    sources = dict(native.SOURCES)
    lib, line = native.load_or_build(cxx, blocked / "kernels", sources, ("-O0", "-std=c++17", "-fPIC"))
    assert lib is not None and line.startswith("few-rows kernels")
