"""Shipped artifacts are checked against the sha256 recorded for them before they are used.

A folder's manifest is its ``SHA256SUMS`` file, in ``sha256sum`` format (``<hex>  <name>``, so
``cd models && sha256sum -c SHA256SUMS`` checks it too). ``check_artifact(path)`` verifies a file
listed in the manifest beside it and raises ArtifactError, one line naming the file, on a
mismatch. A file in a folder without a manifest (a checkpoint the user trained elsewhere) has no
recorded hash: callers still validate its contents. A new shipped artifact (a table, draft
heads) is checked by adding its line to models/SHA256SUMS and calling check_artifact on load.

Hashing is cached per process, keyed by path, size and modification time: the app loads its
models once, and a file replaced on disk is hashed again.
"""

import hashlib
from functools import lru_cache
from pathlib import Path

MANIFEST = "SHA256SUMS"


class ArtifactError(Exception):
    """A file whose sha256 differs from the one recorded for it. One line naming the file."""


def read_manifest(folder: Path) -> dict[str, str]:
    """name -> sha256 hex from ``folder/SHA256SUMS``; empty when there is none."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return {}
    out = {}
    for line in path.read_text().splitlines():
        if line.strip():
            digest, name = line.split(maxsplit=1)
            out[name.lstrip("*")] = digest.lower()
    return out


@lru_cache(maxsize=64)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def sha256(path) -> str:
    st = Path(path).stat()
    return _sha256(str(Path(path).resolve()), st.st_size, st.st_mtime_ns)


def check_artifact(path) -> bool:
    """True when ``path`` is listed in its folder's manifest and matches; False when it is not
    listed (nothing recorded to check). Raises ArtifactError on a mismatch."""
    path = Path(path)
    recorded = read_manifest(path.parent).get(path.name)
    if recorded is None:
        return False
    actual = sha256(path)
    if actual != recorded:
        raise ArtifactError(f"{path} is damaged or not the shipped file: its sha256 is {actual[:16]}…, "
                            f"{MANIFEST} records {recorded[:16]}…")  # fmt: skip
    return True


def record_artifact(path) -> None:
    """Write ``path``'s sha256 into its folder's manifest (replacing its line), when the folder
    has one: retraining a shipped checkpoint keeps the manifest true."""
    path = Path(path)
    manifest = path.parent / MANIFEST
    if not manifest.is_file():
        return
    sums = read_manifest(path.parent) | {path.name: sha256(path)}
    manifest.write_text("".join(f"{digest}  {name}\n" for name, digest in sorted(sums.items())))
