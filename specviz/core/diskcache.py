"""What the app keeps on disk between starts: results that take seconds to make and depend only on
this machine and the code (the kernels' build, specviz/kernels/native.py; the verify-cost curve,
specviz/adaptive/costs.py). They live under the checkout's .cache/ (git ignores it), or under
$SPECVIZ_CACHE where that is set (the start-up benchmark points it at an empty folder).

Each file is named by a sha256 of everything that decides its content, so a new CPU, compiler or
version of the code finds no file and makes one; nothing is ever updated in place. Files are
written whole under a temporary name and renamed: two server processes may write the same one at
once, and a reader sees either no file or a whole one. Deleting the folder is always safe.
"""

import hashlib
import json
import os
import tempfile
from pathlib import Path

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
