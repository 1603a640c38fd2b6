"""What the app keeps on disk between starts: results that take seconds to make and depend only on
this machine and the code (the kernels' build, specviz/kernels/native.py; the verify-cost curve,
specviz/adaptive/costs.py). They live under the checkout's .cache/ (git ignores it), or under
$SPECVIZ_CACHE where that is set (the start-up benchmark points it at an empty folder).

Each file is named by a sha256 of everything that decides its content, so a new CPU, compiler or
version of the code finds no file and makes one; nothing is ever updated in place. Files are
written whole under a temporary name and renamed, so a reader sees either no file or a whole one.
A file measured on first use (``kept_or_made``) is made by one process at a time: two servers, or two
test workers, that want it at once would otherwise each measure it on a machine the other keeps busy,
and the second waits and reads the first's. Deleting the folder is always safe.
"""

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

try:
    import fcntl
except ImportError:  # Windows: no lock, and two processes may measure the same file (each keeps a whole one)
    fcntl = None

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[2]


def cache_dir(name: str) -> Path:
    """The folder for one kind of cached file (not created here)."""
    base = os.environ.get("SPECVIZ_CACHE")
    return (Path(base) if base else ROOT / ".cache") / name


def digest(*parts) -> str:
    """sha256 of JSON-able parts, in order: a cache file's name."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def files_digest(paths) -> str:
    """sha256 of files' names and contents, in the order given."""
    h = hashlib.sha256()
    for p in paths:
        data = Path(p).read_bytes()
        h.update(f"{Path(p).name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def temp_path(path: Path) -> Path:
    """A new, empty file beside ``path`` (same file system, so a rename is atomic); the caller
    renames it over ``path`` (os.replace) or removes it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    return Path(tmp)


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole: under a temporary name, then renamed over it."""
    tmp = temp_path(path)
    try:
        tmp.write_bytes(data)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the checkout's other users may start the app
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def held(path: Path) -> Iterator[None]:
    """An exclusive lock on a file beside ``path`` (``.<name>.lock``) while the block runs: another process
    that asks for the same path waits here. The system drops it when the process dies. No lock where the
    folder cannot be written (a read-only checkout) or the system or file system has no flock."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(path.with_name(f".{path.name}.lock"), "a")  # noqa: SIM115 (held across the yield)
    except OSError:
        handle = None
    try:
        if handle is not None and fcntl is not None:
            with contextlib.suppress(OSError):  # a file system without locks: made by each, as without fcntl
                fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        if handle is not None:
            handle.close()  # and the lock with it


def kept_or_made(path: Path, read: Callable[[], T | None], make: Callable[[], T], encode: Callable[[T], bytes]) -> T:
    """``read()`` (what is kept at ``path``, or None), else ``make()``, written to ``path`` whole for the next run.
    Made under ``held(path)`` and read again there first: a process that waited finds the other's."""
    if (found := read()) is not None:
        return found
    with held(path):
        if (found := read()) is not None:
            return found
        made = make()
        with contextlib.suppress(OSError):  # a read-only checkout: made again next time
            write_atomic(path, encode(made))
    return made
