"""Where a command will write, checked before it does any work: a bad path is one sentence
(ValueError) up front, not a traceback after a five-minute run."""

import tempfile
from pathlib import Path


def _nearest_existing(path: Path) -> Path:
    """``path`` or its nearest existing ancestor (what a mkdir -p would create under)."""
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _writable_dir(folder: Path, shown: str) -> None:
    """Create and delete a file in ``folder``: permission bits say nothing to root, or on /proc."""
    if not folder.is_dir():
        raise ValueError(f"cannot write {shown}: {folder} is not a folder")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        raise ValueError(f"cannot write {shown}: cannot create a file in {folder} ({e.strerror or e})") from None


def _checked(check):
    """A path check whose OSError (a name too long, a loop of links) is one sentence too."""

    def run(path: str) -> Path:
        try:
            return check(path)
        except OSError as e:
            raise ValueError(f"cannot write {path}: {e.strerror or e}") from None

    run.__doc__ = check.__doc__
    return run


@_checked
def writable_file(path: str) -> Path:
    """A file path we may create or replace (its missing parent folders are created on write)."""
    if not path or not path.strip():
        raise ValueError("the output file name is empty")
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{path} is a folder, not a file")
    _writable_dir(_nearest_existing(p.parent), path)
    return p


@_checked
def writable_folder(path: str) -> Path:
    """A folder we may write files into (created if missing); never an empty name, which would
    quietly mean the current folder."""
    if not path or not path.strip():
        raise ValueError("the output folder name is empty")
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ValueError(f"{path} exists and is not a folder")
    _writable_dir(_nearest_existing(p), path)
    return p
