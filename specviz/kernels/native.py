"""The lean pass's own kernels (specviz/kernels/linear.cpp: the products; specviz/kernels/attention.cpp: attention),
built by the machine's C++ compiler (``$CXX``, else c++, g++ or clang++), with -O3 -march=native, the first
time they are needed on this machine (~3 s, the two sources in parallel), and kept on disk: the
library is .cache/kernels/<sha256>.so (specviz/core/diskcache.py), named by the sources, the compiler,
its flags and the CPU, and each process after loads it with ctypes. A change to any of those finds no
file and builds a new one; nothing is downloaded.

Without a compiler, if the build fails, or with SPECVIZ_KERNEL=0, the lean pass runs on torch alone
(torch.addmm, bmm and softmax): slower on this project's CPU, the same numbers within rounding.
``backend()`` says which one runs, in one line (the same whether built now or loaded), and the bench
records it.
"""

import contextlib
import ctypes
import functools
import os
import platform
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from specviz.core.diskcache import cache_dir, digest, files_digest, temp_path

HERE = Path(__file__).parent
# Each source with its own rounding rule: the products fuse multiply-adds (fast, and every row takes the
# same ones); attention does not, so that its two loop orders (few rows, more rows) round alike.
SOURCES = {HERE / "linear.cpp": "-ffp-contract=fast", HERE / "attention.cpp": "-ffp-contract=off"}
FLAGS = ("-O3", "-std=c++17", "-fPIC")
TUNINGS = (("-march=native",), ())  # for this CPU; else, where the compiler lacks that flag, for any of its kind
CACHE = cache_dir("kernels")
_LOCK = threading.Lock()  # held while the library is loaded or built
_START = threading.Lock()
_started = False  # prepare_in_background has started its thread
_size, _ptr = ctypes.c_size_t, ctypes.c_void_p
_LINEAR = [_ptr, _size, _size, _ptr, _size, _ptr, _ptr]  # x, N, C, W panels, O, b, y
# qkv, N, n_head, head size, K, V, capacity, P, bias, bias row stride, scale, y
_ATTEND = [_ptr, _size, _size, _size, _ptr, _ptr, _size, _size, _ptr, _size, ctypes.c_double, _ptr]
SIGNATURES = {  # symbol -> (return type, argument types)
    "linear_rows_f32": (None, _LINEAR),
    "linear_rows_f64": (None, _LINEAR),
    "linear_panel_bytes": (_size, []),  # the products' panel width: 64 bytes (AVX2), 128 (AVX-512)
    "attend_f32": (ctypes.c_int, _ATTEND),  # 0 done, 1 a head size it was not built for
    "attend_f64": (ctypes.c_int, _ATTEND),
}


def compiler() -> str | None:
    """The C++ compiler to build with: $CXX, else the first of c++, g++, clang++ on PATH."""
    return os.environ.get("CXX") or next(filter(None, map(shutil.which, ("c++", "g++", "clang++"))), None)


def cpu_stamp() -> str:
    """What -march=native builds for: the first processor's model and feature flags (Linux), else what
    platform knows. A library built for one CPU may not run on another (an AVX-512 build on an AVX2
    machine), so a checkout copied or shared between machines builds again on each."""
    try:
        block = Path("/proc/cpuinfo").read_text().split("\n\n", 1)[0]
    except OSError:
        block = ""
    keep = ("vendor_id", "cpu family", "model", "model name", "stepping", "flags", "features", "cpu part", "hardware")
    lines = sorted(line for line in block.splitlines() if line.partition(":")[0].strip().lower() in keep)
    return "\n".join(lines) or f"{platform.machine()} {platform.processor()}"


@functools.cache
def compiler_version(cxx: str) -> str:
    """The compiler's first line of ``--version`` (empty when it does not answer): part of the library's name."""
    try:
        done = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return (done.stdout.splitlines() or [""])[0]


def describe(cxx: str, tuning: tuple[str, ...], flags: tuple[str, ...] = FLAGS) -> str:
    return f"few-rows kernels ({Path(cxx).name} {' '.join((flags[0], *tuning))})"


def library_name(cxx: str, tuning: tuple[str, ...], sources: dict = SOURCES, flags: tuple[str, ...] = FLAGS) -> str:
    """The cached library's file name: a sha256 of everything that decides what the build makes."""
    folders = {Path(src).parent for src in sources}
    headers = sorted(h for d in folders for h in d.glob("*.h"))  # what the sources include (vec.h)
    code = files_digest([*sources, *headers])
    rules = [(Path(src).name, rule) for src, rule in sources.items()]
    return digest(code, rules, flags, tuning, shutil.which(cxx) or cxx, compiler_version(cxx), cpu_stamp()) + ".so"


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or ["no message"])[0][:160]


def _yield_cpu(pid: int) -> None:
    """Lower a compiler's priority: a build in the background (prepare_in_background) then takes the
    CPU the app's first page leaves idle, not the CPU it draws with; alone on a machine it runs as fast."""
    with contextlib.suppress(AttributeError, OSError):  # no setpriority (Windows), or the job is gone
        os.setpriority(os.PRIO_PROCESS, pid, 10)


def compile_library(cxx: str, tuning: tuple[str, ...], out: Path, sources: dict = SOURCES,
                    flags: tuple[str, ...] = FLAGS) -> str | None:  # fmt: skip
    """Build the library into ``out``: the sources compiled side by side (one compiler each: on 2 cores
    the build takes the longest source's time, not the sum), then linked. -> None when it built,
    else the compiler's first line of complaint."""
    with tempfile.TemporaryDirectory(prefix="specviz-") as tmp:
        jobs = []
        try:
            for i, (src, rule) in enumerate(sources.items()):
                obj, log = Path(tmp) / f"{i}-{Path(src).stem}.o", Path(tmp) / f"{i}.log"
                with open(log, "w") as err:
                    cmd = [cxx, *flags, *tuning, rule, "-c", str(src), "-o", str(obj)]
                    jobs.append((subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err), obj, log))
                _yield_cpu(jobs[-1][0].pid)
            for proc, _, log in jobs:
                if proc.wait(timeout=120):
                    return _first_line(log.read_text(errors="replace"))
            link = [cxx, "-shared", *(str(obj) for _, obj, _ in jobs), "-o", str(out)]
            done = subprocess.run(link, capture_output=True, text=True, timeout=120)
            return _first_line(done.stderr) if done.returncode else None
        except (OSError, subprocess.SubprocessError) as e:
            return str(e)[:160]
        finally:
            for proc, _, _ in jobs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()


def load_or_build(cxx: str, cache: Path | None, sources: dict = SOURCES, flags: tuple[str, ...] = FLAGS,
                  tunings: tuple[tuple[str, ...], ...] = TUNINGS) -> tuple[ctypes.CDLL | None, str]:  # fmt: skip
    """(the kernels' library or None, one line saying what runs): the cached library for these sources,
    compiler, flags and CPU when ``cache`` holds one, else built now and kept there (renamed into place
    whole: two servers may build at once). Where ``cache`` is None or cannot be written, it is built
    in a temporary folder and kept in memory only."""
    names = {tuning: library_name(cxx, tuning, sources, flags) for tuning in tunings}
    if cache is not None:
        for tuning, name in names.items():
            if (cache / name).is_file():
                try:
                    return _declare(ctypes.CDLL(str(cache / name))), describe(cxx, tuning, flags)
                except (OSError, AttributeError):
                    pass  # not a whole library of these symbols: built again below, over it
    why = "no message"
    for tuning, name in names.items():
        with tempfile.TemporaryDirectory(prefix="specviz-") as scratch:
            keep = cache is not None
            try:
                out = temp_path(cache / name) if keep else Path(scratch) / "kernels.so"
            except OSError:  # a cache folder that cannot be written: build for this process only
                keep, out = False, Path(scratch) / "kernels.so"
            try:
                if (problem := compile_library(cxx, tuning, out, sources, flags)) is not None:
                    why = problem
                    continue
                lib = _declare(ctypes.CDLL(str(out)))  # mapped now: the file can be renamed, or go
                if keep:
                    os.chmod(out, 0o644)
                    os.replace(out, cache / name)
                return lib, describe(cxx, tuning, flags)
            except (OSError, AttributeError) as e:
                why = str(e)[:160]
            finally:
                out.unlink(missing_ok=True)
    return None, f"torch alone (the kernels did not build: {why})"


@functools.cache
def _build() -> tuple[ctypes.CDLL | None, str]:
    """(the kernels' library or None, one line saying what runs), once per process."""
    if os.environ.get("SPECVIZ_KERNEL", "1") == "0":
        return None, "torch alone (SPECVIZ_KERNEL=0)"
    cxx = compiler()
    if cxx is None:
        return None, "torch alone (no C++ compiler found)"
    return load_or_build(cxx, CACHE)


def _declare(lib: ctypes.CDLL) -> ctypes.CDLL:
    for name, (restype, argtypes) in SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


def kernel() -> ctypes.CDLL | None:
    """The built kernels, or None where the lean pass runs on torch alone."""
    with _LOCK:  # one build, whichever thread asks first
        return _build()[0]


def backend() -> str:
    """One line: what runs the lean pass's products and attention, and why."""
    with _LOCK:
        return _build()[1]


def ready() -> bool:
    """Whether the kernels are loaded or built (or known to be unavailable) in this process: ``kernel()``
    answers at once."""
    return _build.cache_info().currsize > 0


def prepare_in_background() -> None:
    """Load or build the kernels in a thread, once per process, so that the first pass finds them ready:
    a build (the first start on a machine) runs in the compiler's processes while this one goes on
    (the app draws its first page meanwhile)."""
    global _started
    with _START:  # not _LOCK: that one is held for the whole build, and every page calls this
        if _started:
            return
        _started = True
    threading.Thread(target=backend, name="specviz-kernels", daemon=True).start()
