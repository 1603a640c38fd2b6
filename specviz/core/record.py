"""The round record: everything one round did, as plain data, so the app can step back and
forth without recomputing, and a trace can be saved as JSON or CSV.

Distributions are float64 tensors over the whole vocabulary, stored as the verifier made them
(often views of one (N+1, V) tensor): a round is recorded on every step of every run, so the
record stays cheap, and conversion to lists or frames happens when a chart or an export asks.
Over a vocabulary wider than FULL_LIMIT (a real model's) they are kept as ``TopRest``: the top
entries and the mass of the rest (``compact``).
Timings are the only wall-clock measurements; ``to_json(timings=False)`` leaves them out, and
what remains is the same, byte for byte, for the same seed and settings.
"""

import json
import re
from dataclasses import asdict, dataclass, field

import pandas as pd
import torch

from specviz.core.choice import Choice

TIMING_FIELDS = ("draft_s", "verify_s", "accept_s")
# Records keep whole p and q rows up to this vocabulary (the character model's 65); a wider one (SmolLM2's
# 49,152: 390 KB a row in float64, several rows a round) keeps its TOP_K largest entries and the rest's mass.
FULL_LIMIT = 4096
TOP_K = 20


def plain(value):
    """A record's value with every tensor turned into lists of Python numbers, for JSON."""
    if isinstance(value, torch.Tensor):
        return value.tolist()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def word_pieces(vocab: list[str]) -> bool:
    """Whether tokens are word pieces (some piece is longer than one character: a BPE tokenizer's), read from
    the vocabulary itself. Cheap: a BPE vocabulary has a long piece among its first ids."""
    return any(len(p) > 1 for p in vocab)


# not the character model's own names ("the character GPT", "a character model"): those stay its names
_CHARACTER = re.compile(r"\b([Cc])haracter(s?)\b(?! GPT\b| model\b|-level\b)")


def worded(text: str, vocab: list[str]) -> str:
    """Our own sentence about "characters" as it reads for this vocabulary: "tokens" over word pieces."""
    if not word_pieces(vocab):
        return text
    return _CHARACTER.sub(lambda m: ("T" if m.group(1) == "C" else "t") + "oken" + m.group(2), text)


@dataclass
class TopRest:
    """A distribution over a wide vocabulary as recorded: its largest entries, and one number for the mass of
    all the others (probs + [rest] sums to 1 up to rounding). For a drafted position p and q are kept over the
    same ids, so a chart shows both at each of them."""

    ids: list[int]  # (k,) token ids: the largest of p or q, and the token the round checked or drew
    probs: list[float]  # (k,) their probabilities
    rest: float  # the total probability of every id not in ids
    size: int  # V: the vocabulary the distribution is over
    overlap: float | None = None  # a position's p: Σ min(p, q) over the whole vocabulary (its acceptance chance)

    def __getitem__(self, token: int) -> float:
        """The probability of a kept id (KeyError for any other: its probability was not recorded)."""
        return self.probs[self.ids.index(int(token))]


def top_rest(dist: torch.Tensor, ids: list[int], overlap: float | None = None) -> TopRest:
    """``dist`` (V,) kept at ``ids``: their probabilities and the mass of the rest, summed from the whole row."""
    probs = dist[ids].tolist()
    return TopRest(ids, probs, float(dist.sum()) - sum(probs), dist.numel(), overlap)


def _kept_ids(rows: list[torch.Tensor], must: list[int | None], k: int) -> list[int]:
    """The ids to keep: ``must`` first (the drafted or drawn token), then each row's k largest, largest first."""
    best = [i for row in rows for i in torch.topk(row, min(k, row.numel())).indices.tolist()]
    return list(dict.fromkeys([int(t) for t in must if t is not None] + best))


def compact(record: "RoundRecord", k: int = TOP_K) -> None:
    """Replace a round's p, q, residual and bonus rows by their top ``k`` + the rest (TopRest), in place,
    when the vocabulary is wider than FULL_LIMIT; a narrower one keeps its whole rows."""
    for pos in record.positions:
        if not isinstance(pos.p, torch.Tensor) or pos.p.numel() <= FULL_LIMIT:
            return
        ids = _kept_ids([pos.p, pos.q], [pos.token, pos.sampled], k)
        overlap = float(torch.minimum(pos.p, pos.q).sum())
        pos.p, pos.q = top_rest(pos.p, ids, overlap), top_rest(pos.q, ids)
    for name, drawn in (("residual", record.correction), ("bonus_p", record.bonus)):
        row = getattr(record, name)
        if isinstance(row, torch.Tensor) and row.numel() > FULL_LIMIT:
            setattr(record, name, top_rest(row, _kept_ids([row], [drawn], k)))


@dataclass
class PositionRecord:
    """One drafted token tried against the target."""

    node: int  # index in the draft
    depth: int  # 1 = first token after the root
    token: int
    q_x: float  # q(x): probability the drafter gave it (1 for one-hot proposals)
    p_x: float  # p(x): the target's probability (of the residual, for a later sibling)
    ratio: float  # p(x)/q(x)
    accept_prob: float  # min(1, p(x)/q(x))
    u: float | None  # uniform draw, None when none was needed (temperature 0)
    accepted: bool
    sampled: int | None  # nasd-seed variant only: the token sampled from p
    q: torch.Tensor | TopRest  # (V,) what x was drafted from (one-hot for deterministic drafters)
    p: torch.Tensor | TopRest  # (V,) what x was tried against: the target's row, or a residual after a rejected sibling


@dataclass
class RoundRecord:
    index: int
    context_len: int  # tokens before the round (prompt + generated)
    window_start: int  # first context index the target sees
    reprefill: bool  # the window moved: the cache was rebuilt from context[window_start:-1]
    kv_before: int  # cache length when verification starts
    kv_after_verify: int  # + the root, every drafted token and any extra tokens
    kv_after_trim: int  # what stays: the root and the accepted path
    kv_kept: list[int]  # entries of this pass that stay: the root, the accepted path (all before kv_before stay)
    draft_tokens: list[int]
    draft_parents: list[int]  # -1 = child of the root
    draft_positions: list[int]  # position ids sent to the target: root first, then each node
    tree_mask: list[list[bool]] | None  # trees only: (N+1, N+1) over [root + nodes]
    draft_notes: dict
    positions: list[PositionRecord]
    accepted_path: list[int]  # draft nodes accepted, root to leaf
    residual: torch.Tensor | TopRest | None  # (V,) on rejection: what the correction was drawn from
    correction: int | None
    bonus_p: torch.Tensor | TopRest | None  # (V,) after a fully accepted draft: what the bonus was drawn from
    bonus: int | None
    emitted: list[int]
    emitted_kinds: list[str]  # per emitted token: "accepted", "correction" or "bonus"
    drafter_update: dict  # what the drafter changed after the round (NASD storage growth)
    k_choice: Choice | None = None  # adaptive K only: the K drafted and why
    verify_notes: dict = field(default_factory=dict)  # the verifier's own record (block: weights, stops, tau)
    draft_sampling: str | None = None  # Draft.sampling: how a sampled tree's siblings were drawn (None: not sampled)
    draft_s: float = 0.0
    verify_s: float = 0.0
    accept_s: float = 0.0
    # Tokens the verify pass ran besides the draft (Draft.extra: lookahead's Jacobi window), after
    # the nodes: counted in kv_after_verify, never kept.
    extra_tokens: list[int] = field(default_factory=list)
    extra_positions: list[int] = field(default_factory=list)
    # Context tokens the round's target work prefilled besides the root and nodes (the prompt in round 1,
    # the window after a re-prefill): in the verify pass itself, or just before the draft for a drafter that
    # reads the target's cache. Its verify_s includes reading them.
    prefilled: int = 0

    @property
    def number(self) -> int:
        """The round's number on screen: round 1 is the first (``index`` counts from 0, for lists)."""
        return self.index + 1

    @property
    def n_accepted(self) -> int:
        return len(self.accepted_path)


@dataclass
class Trace:
    """A run: its settings, the prompt and every round, all as token ids. ``vocab`` holds each id's
    piece of text (the tokenizer's ``pieces``: one character each for the character model, longer for
    a BPE tokenizer); text is made by joining pieces, never by assuming a token is one character. The
    JSON export keeps the key ``vocab``, a list of these pieces."""

    settings: dict
    vocab: list[str]  # the text of token id i is vocab[i]
    prompt: list[int]
    rounds: list[RoundRecord] = field(default_factory=list)

    @property
    def tokens(self) -> list[int]:
        return [t for r in self.rounds for t in r.emitted]

    @property
    def text(self) -> str:
        return "".join(self.vocab[t] for t in self.tokens)

    def root(self, r: RoundRecord) -> int:
        """The last context token of round ``r``: verification's first input, the draft tree's root."""
        return (self.prompt + self.tokens)[r.context_len - 1]

    def summary(self) -> dict:
        """Headline figures. target_forwards counts verification passes (not the prefill);
        acceptance_rate = accepted / tried, over the drafted tokens the target actually checked."""
        forwards = len(self.rounds)
        drafted = sum(len(r.draft_tokens) for r in self.rounds)
        tried = sum(len(r.positions) for r in self.rounds)  # a chain stops at its first rejection
        accepted = sum(r.n_accepted for r in self.rounds)
        return {
            "tokens": len(self.tokens),
            "target_forwards": forwards,
            "mean_accepted": len(self.tokens) / forwards if forwards else 0.0,
            "acceptance_rate": accepted / tried if tried else 0.0,
            "drafted": drafted,
            "tried": tried,
            "accepted": accepted,
            "reprefills": sum(r.reprefill for r in self.rounds),
        }

    def to_dict(self, timings: bool = True) -> dict:
        rounds = [plain(asdict(r)) for r in self.rounds]
        if not timings:
            for r in rounds:
                for k in TIMING_FIELDS:
                    del r[k]
        return {"settings": self.settings, "vocab": list(self.vocab), "prompt": self.prompt, "text": self.text,
                **self.summary(), "rounds": rounds}  # fmt: skip

    def to_json(self, timings: bool = True) -> str:
        return json.dumps(self.to_dict(timings))

    def rounds_frame(self) -> pd.DataFrame:
        """One row per round."""
        rows = []
        for r in self.rounds:
            rows.append({
                "round": r.index, "context_len": r.context_len, "window_start": r.window_start,
                "reprefill": r.reprefill, "kv_before": r.kv_before, "kv_after_verify": r.kv_after_verify,
                "kv_after_trim": r.kv_after_trim, "drafted": len(r.draft_tokens), "accepted": r.n_accepted,
                "emitted": len(r.emitted), "text": "".join(self.vocab[t] for t in r.emitted),
                "draft_s": r.draft_s, "verify_s": r.verify_s, "accept_s": r.accept_s,
            })  # fmt: skip
        return pd.DataFrame(rows)

    def positions_frame(self) -> pd.DataFrame:
        """One row per verified position (drafted token tried), without the full vectors."""
        rows = []
        for r in self.rounds:
            for p in r.positions:
                rows.append({
                    "round": r.index, "node": p.node, "depth": p.depth, "token": p.token,
                    "char": self.vocab[p.token], "q_x": p.q_x, "p_x": p.p_x, "ratio": p.ratio,
                    "accept_prob": p.accept_prob, "u": p.u, "accepted": p.accepted,
                })  # fmt: skip
        return pd.DataFrame(rows)
