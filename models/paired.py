"""A draft head's file, paired with one target (models/eagle.py, models/mtp.py): its tensors in float16 (half
the file; a head's measured accuracy is taken after the round trip) and, in the header, its format, its
config, its training metadata and the sha256 of the target it was trained on. Loading checks the file's own
sha256 (models/SHA256SUMS), its format and its tensors, and refuses it with any other target: one line."""

import json
from dataclasses import asdict
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from models.artifacts import ArtifactError, check_artifact, record_artifact, sha256
from models.checkpoint import atomic_write


def save_paired(path, module: torch.nn.Module, fmt: str, target_path, meta: dict) -> None:
    """``module`` (with its dataclass ``config``) at ``path``, paired with the target at ``target_path``."""
    tensors = {k: v.detach().to("cpu", torch.float16).contiguous() for k, v in module.state_dict().items()}
    header = {"format": fmt, "config": json.dumps(asdict(module.config)),
              "meta": json.dumps(meta | {"target_sha256": sha256(target_path)})}  # fmt: skip
    atomic_write(Path(path), lambda tmp: save_file(tensors, tmp, metadata=header))
    record_artifact(path)


def load_paired(path: Path, target, fmt: str, make, error: type[Exception], what: str, command: str):
    """The module saved at ``path`` for this target Checkpoint, in the target's dtype, eval mode, with its
    ``meta``: ``make(config dict)`` builds it empty. Raises ``error`` (one line naming the file and
    ``command``, the one that trains it again) when the file is missing, damaged, malformed or paired with
    another target."""
    if not path.is_file():
        raise error(f"{what} not found: {path} (train it: python -m specviz {command})")
    try:
        check_artifact(path)
        with safe_open(path, framework="pt") as f:
            header = f.metadata() or {}
            tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open is not iterable)
        if header.get("format") != fmt:
            raise ValueError(f"not a specviz {what}")
        module = make(json.loads(header["config"]))
        meta = json.loads(header["meta"])
        module.load_state_dict({k: v.float() for k, v in tensors.items()}, strict=True)
    except (ArtifactError, SafetensorError, OSError, ValueError, KeyError, TypeError, RuntimeError) as e:
        reason = " ".join(str(e).split()) or type(e).__name__
        raise error(f"cannot load {what} {path}: {reason[:300]}") from None
    want = meta.get("target_sha256", "")
    if sha256(target.path) != want:
        raise error(f"{path.name} was trained on another target (sha256 {want[:12]}…), not "
                    f"{Path(target.path).name}; retrain it with: python -m specviz {command}")  # fmt: skip
    module.meta = meta
    return module.to(target.model.lm_head.weight.dtype).eval()
