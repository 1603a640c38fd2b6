"""The distilled table: what the target does after every short context of the training split
(built by ``python -m specviz distill``, see specviz/training/distill.py), loaded for the distilled drafters.

A context of L characters c_1..c_L (c_L the last) is one integer, sum_i (c_{L-i} + 1) * (V+1)^i:
digits are never 0, so contexts of different lengths never share a key, and the empty context is 0.
Rows hold, per context, how often it was seen, the target's most frequent argmax after it, how
often the target's argmax was that one (``agree``: a T = 0 draft's chance of acceptance, as seen on
the training text), and the top_k characters of its average next-character distribution. ``q(row)`` turns a row into the
full distribution the drafter samples from: the top_k probabilities, the rest of the mass spread
evenly over the other characters, in float64. It is a pure function of the file, so the q the
verifier checks against is exactly the q the draft was drawn from.

The shipped table's own sha256 is in models/SHA256SUMS and checked on load. The table belongs to
one target: its header records that checkpoint's sha256, and a table paired with any other
checkpoint is refused.
"""

import json
from functools import lru_cache
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open

from models.artifacts import ArtifactError, check_artifact, sha256

FORMAT = "specviz-distilled-2"  # 2: with agree
DEFAULT_PATH = Path(__file__).resolve().parent / "distilled.safetensors"
MAX_CONTEXT = 10  # (V+1)^L must fit an int64 key


class DistilledError(Exception):
    """A table that is missing, corrupt, or made for another target. One line naming the file."""


def context_key(seq: list[int], L: int, V: int) -> int:
    """The key of the last L tokens of seq (see the module docstring)."""
    key, base = 0, 1
    for i in range(1, L + 1):
        key += (seq[-i] + 1) * base
        base *= V + 1
    return key


class DistilledTable:
    def __init__(self, path: Path, target_path: Path):
        path = Path(path)
        if not path.is_file():
            raise DistilledError(f"distilled table not found: {path} (build it: python -m specviz distill)")
        try:
            check_artifact(path)  # the shipped table: its sha256 is in models/SHA256SUMS
            with safe_open(path, framework="pt") as f:
                header = f.metadata() or {}
                t = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open is not iterable)
            self.meta = json.loads(header.get("meta", "{}"))
            if self.meta.get("format") != FORMAT:
                raise ValueError(f"not a {FORMAT} table (an older build? rebuild it: python -m specviz distill)")
            keys, counts, mode, agree = t["keys"], t["counts"], t["mode"], t["agree"]
            # numpy for the hot path: a row's .tolist() costs a fraction of a tensor's
            self.top_tokens, self.top_probs = t["top_tokens"].long().numpy(), t["top_probs"].double().numpy()
            U = len(keys)
            if not (counts.shape == mode.shape == agree.shape == (U,) and self.top_tokens.shape == self.top_probs.shape
                    and self.top_tokens.shape[0] == U):  # fmt: skip
                raise ValueError("its arrays do not have matching lengths")
        except (ArtifactError, SafetensorError, OSError, ValueError, KeyError, TypeError) as e:
            reason = " ".join(str(e).split()) or type(e).__name__
            raise DistilledError(f"cannot load distilled table {path}: {reason[:300]}") from None
        want = self.meta["target_sha256"]
        if sha256(target_path) != want:
            raise DistilledError(
                f"{path.name} was distilled from another target (sha256 {want[:12]}…), not {Path(target_path).name}; "
                "rebuild it with: python -m specviz distill"
            )
        self.path = path
        self.vocab = self.meta["vocab"]
        self.V = len(self.vocab)
        self.max_context = self.meta["config"]["max_context"]
        # Plain Python for the hot path: a dict look-up is ~50 ns, a tensor index ~1 us.
        self.row = dict(zip(keys.tolist(), range(U), strict=True))
        self.counts = counts.tolist()
        self.mode = mode.tolist()
        self.agree = agree.tolist()  # 255ths: small ints, which Python shares, so a pointer an entry

    def __len__(self) -> int:
        return len(self.counts)

    def keys(self, seq: list[int]) -> list[int]:
        """The keys of seq's last 1, 2, .. max_context characters: key_L = sum over l <= L of
        (seq[-l] + 1) * (V + 1)^(l - 1), so the last character is the lowest digit."""
        V1, key, base, keys = self.V + 1, 0, 1, []
        for L in range(1, min(self.max_context, len(seq)) + 1):
            key += (seq[-L] + 1) * base
            base *= V1
            keys.append(key)
        return keys

    def extend(self, keys: list[int], token: int, n: int) -> list[int]:
        """``keys`` of a sequence -> those of the sequence and ``token`` (at most n): each key_L is the
        token's digit plus (V + 1) times the old key_(L-1), so a drafter walking a chain updates
        them in n steps instead of rebuilding them from the sequence (a fifth of a drafted token's time)."""
        if n <= 0:
            return []
        t, V1 = token + 1, self.V + 1
        return [t, *[t + V1 * k for k in keys[: n - 1]]]

    def lookup(self, seq: list[int], min_count: int) -> tuple[int, int]:
        """(row, L) of the longest context ending seq that was seen at least min_count times;
        the empty context (L = 0) when none was. See lookup_keys."""
        return self.lookup_keys(self.keys(seq), min_count)

    def lookup_keys(self, keys: list[int], min_count: int) -> tuple[int, int]:
        """``lookup`` from the sequence's keys (``keys``, ``extend``). Tried longest first: in
        drafting the longest context usually qualifies (L = 8 for 40% of the distilled chain's
        tokens, 5-7 for 45%; 11 presets, T = 0.8), and each try is a few cache misses in a dict of
        a million keys, so that takes ~2 tries where shortest first took ~7."""
        for L in range(len(keys), 0, -1):
            r = self.row.get(keys[L - 1])
            if r is not None and self.counts[r] >= min_count:
                return r, L
        return self.row[0], 0

    def agreement(self, row: int) -> float:
        """How often the target's argmax after this row's context was its mode, on the training text: the
        chance that a T = 0 draft of the mode is accepted (well calibrated on the target's own greedy text:
        rows at 0.3 were accepted 0.29 of the time, at 0.9 and above 0.98; 11 presets)."""
        return self.agree[row] / 255

    def top(self, row: int) -> tuple[list[int], list[float]]:
        """The row's top_k characters and their average probabilities, most likely first."""
        return self.top_tokens[row].tolist(), self.top_probs[row].tolist()

    def probs(self, row: int, temperature: float = 1.0) -> list[float]:
        """The row's full distribution scaled like the target's, p^(1/T) renormalised (T > 0), as plain
        floats (V,): its top_k characters' average probabilities, the rest of the mass spread evenly
        over the others. Plain Python: a drafter makes one for each new context it drafts from, and
        the same in tensor ops (~10 of them on 65 floats) cost ~40 us in a round."""
        tokens, top = self.top(row)
        rest = max(0.0, 1.0 - sum(top)) / max(1, self.V - len(tokens))
        m, e = max([rest, *top]), 1.0 / temperature  # scaled relative to the largest: it stays 1
        w = [(rest / m) ** e] * self.V
        for t, p in zip(tokens, top, strict=True):
            w[t] = (p / m) ** e
        z = sum(w)
        return [x / z for x in w]

    def q(self, row: int) -> torch.Tensor:
        """The full distribution of a row (float64, sums to 1). (V,)"""
        return torch.tensor(self.probs(row), dtype=torch.float64)

    def ranked(self, row: int) -> list[int]:
        """The row's characters, best first: the target's mode, then the rest of the top_k."""
        m = self.mode[row]
        return [m] + [t for t in self.top_tokens[row].tolist() if t != m]


@lru_cache(maxsize=2)
def _load(path: Path, target_path: Path, stamp: tuple) -> DistilledTable:
    return DistilledTable(path, target_path)


def load_table(target_path: Path, path: Path = DEFAULT_PATH) -> DistilledTable:
    """The table for this target, loaded once per process (it is read-only once loaded); loaded
    again if either file changed."""
    path, target_path = Path(path).resolve(), Path(target_path).resolve()
    stamp = tuple((p.stat().st_size, p.stat().st_mtime) if p.is_file() else None for p in (path, target_path))
    return _load(path, target_path, stamp)
