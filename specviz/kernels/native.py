"""The lean pass's own kernels (specviz/kernels/linear.cpp: the products; specviz/kernels/attention.cpp: attention),
built at first use by the machine's C++ compiler (``$CXX``, else c++, g++ or clang++), with -O3
-march=native, into a temporary folder, once per process (~0.5 s); nothing is downloaded or kept.

Without a compiler, if the build fails, or with SPECVIZ_KERNEL=0, the lean pass runs on torch alone
(torch.addmm, bmm and softmax): slower on this project's CPU, the same numbers within rounding.
``backend()`` says which one runs, in one line, and the bench records it.
"""

import ctypes
import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
# Each source with its own rounding rule: the products fuse multiply-adds (fast, and every row takes the
# same ones); attention does not, so that its two loop orders (few rows, more rows) round alike.
SOURCES = {HERE / "linear.cpp": "-ffp-contract=fast", HERE / "attention.cpp": "-ffp-contract=off"}
FLAGS = ("-O3", "-std=c++17", "-fPIC")
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


@functools.cache
def _build() -> tuple[ctypes.CDLL | None, str]:
    """(the kernels' library or None, one line saying what runs). Built once per process: for this
    CPU (-march=native), else, where the compiler lacks that flag, for any CPU of its kind."""
    if os.environ.get("SPECVIZ_KERNEL", "1") == "0":
        return None, "torch alone (SPECVIZ_KERNEL=0)"
    cxx = compiler()
    if cxx is None:
        return None, "torch alone (no C++ compiler found)"
    why = "no message"
    for tuning in (("-march=native",), ()):
        with tempfile.TemporaryDirectory(prefix="specviz-") as tmp:
            out, objects = Path(tmp) / "kernels.so", [Path(tmp) / f"{src.stem}.o" for src in SOURCES]
            steps = [[cxx, *FLAGS, *tuning, rule, "-c", str(src), "-o", str(obj)]
                     for (src, rule), obj in zip(SOURCES.items(), objects, strict=True)]  # fmt: skip
            steps.append([cxx, "-shared", *map(str, objects), "-o", str(out)])
            try:
                for step in steps:
                    done = subprocess.run(step, capture_output=True, text=True, timeout=120)
                    if done.returncode:
                        break
                if done.returncode == 0:
                    lib = ctypes.CDLL(str(out))  # mapped now: the file can go with the folder
                    return _declare(lib), f"few-rows kernels ({Path(cxx).name} {' '.join((FLAGS[0], *tuning))})"
                why = (done.stderr.strip().splitlines() or ["no message"])[0][:160]
            except (OSError, subprocess.SubprocessError) as e:
                why = str(e)[:160]
    return None, f"torch alone (the kernels did not build: {why})"


def _declare(lib: ctypes.CDLL) -> ctypes.CDLL:
    for name, (restype, argtypes) in SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


def kernel() -> ctypes.CDLL | None:
    """The built kernels, or None where the lean pass runs on torch alone."""
    return _build()[0]


def backend() -> str:
    """One line: what runs the lean pass's products and attention, and why."""
    return _build()[1]
