"""vLLM's own speculative-decoding numbers, read from a /metrics snapshot (the Prometheus text exposition
format, parsed by prometheus_client's text parser) and put on the app's curves.

vLLM counts, per label set (model_name, engine), since the server started:

    drafts        vllm:spec_decode_num_drafts_total           verify rounds that carried a draft
    draft tokens  vllm:spec_decode_num_draft_tokens_total     tokens drafted in them
    accepted      vllm:spec_decode_num_accepted_tokens_total  drafted tokens the target accepted
    by position   vllm:spec_decode_num_accepted_tokens_per_pos_total{position="i"}
                  rounds whose draft was accepted at least up to position i (0-based)

so accepted at position i / drafts is the chance a round keeps its first i + 1 drafted tokens, and a round
emits 1 + accepted / drafts tokens on average (its accepted drafts, plus the correction or the bonus). If
every position were accepted with the same chance a, that mean would be (1 - a^(K+1)) / (1 - a): ``fit_alpha``
solves for a. Snapshots from several engines or models are summed, as a PromQL sum() would.

vLLM's per-request statistics (--per-request-spec-decode-metrics) come back in the API's responses, not at
/metrics, so a snapshot never holds them."""

import math
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from specviz.core.markup import cut
from specviz.teaching.stats import expected_tokens_per_round

EXAMPLE = Path(__file__).with_name("vllm_metrics.txt")  # a snapshot written from vLLM's documented format
DRAFTS = "vllm:spec_decode_num_drafts_total"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
MAX_BYTES = 20_000_000  # a server's /metrics is ~100 kB; far larger is not a snapshot
MAX_POSITIONS = 64  # vLLM drafts at most tens of tokens a round


class SnapshotError(ValueError):
    """A snapshot that cannot be read: one line saying where and what is wrong."""


@dataclass
class VllmSpecStats:
    drafts: float  # verify rounds that carried a draft, summed over label sets
    draft_tokens: float  # tokens drafted in them
    accepted: float  # drafted tokens the target accepted
    accepted_per_pos: list[float]  # (K,) rounds accepted at least up to position i; [] if the snapshot has none
    label_sets: int  # how many (model_name, engine, ...) label sets were summed
    models: list[str]  # the model_name labels seen, in order

    @property
    def k_mean(self) -> float:
        """Drafted tokens per round: K, or less where a drafter proposed fewer (n-gram lookup finds no match)."""
        return self.draft_tokens / self.drafts

    @property
    def k(self) -> int:
        """The draft length the curves use: the positions vLLM counted (its num_speculative_tokens), else
        the mean rounded up (vLLM drafts at most K tokens a round, so K is at least the mean)."""
        return len(self.accepted_per_pos) or max(1, math.ceil(self.k_mean - 1e-9))

    @property
    def unplaced(self) -> float:
        """Accepted tokens the per-position counters do not hold (0 when they agree; a scrape between two
        updates can part them). 0 when there are no per-position counters."""
        return self.accepted - sum(self.accepted_per_pos) if self.accepted_per_pos else 0.0

    @property
    def acceptance_rate(self) -> float:
        """accepted / drafted tokens: vLLM's "draft acceptance rate"."""
        return self.accepted / self.draft_tokens if self.draft_tokens else 0.0

    @property
    def mean_acceptance_length(self) -> float:
        """Tokens a round emits on average, the bonus or correction included: 1 + accepted / drafts."""
        return 1 + self.accepted / self.drafts

    @property
    def by_position(self) -> list[float]:
        """(K,) the chance a round keeps its drafts up to position i: accepted at i / drafts."""
        return [a / self.drafts for a in self.accepted_per_pos]

    @property
    def conditional(self) -> list[float | None]:
        """(K,) the chance position i is accepted given every position before it was: accepted at i over
        accepted at i - 1 (drafts before the first); None where no round reached it."""
        reached = [self.drafts, *self.accepted_per_pos[:-1]]
        return [a / r if r else None for a, r in zip(self.accepted_per_pos, reached, strict=True)]

    @property
    def cut_lengths(self) -> list[float]:
        """(K,) the mean acceptance length vLLM's own rounds would have had with their drafts cut to K' = 1..K
        tokens: 1 + the first K' of by_position. A chain's token at position i does not depend on how long
        the chain goes on, so a cut round keeps what it accepted before the cut; [] without the counters."""
        out, total = [], 1.0
        for share in self.by_position:
            total += share
            out.append(total)
        return out

    @property
    def alpha(self) -> float:
        """a such that (1 - a^(K+1)) / (1 - a) is the measured mean acceptance length."""
        return fit_alpha(self.mean_acceptance_length, self.k)


def fit_alpha(mean_length: float, k: int) -> float:
    """The a in [0, 1] at which sum_{i=0..K} a^i = (1 - a^(K+1)) / (1 - a) equals ``mean_length``. The sum
    rises strictly with a from 1 (a = 0) to K + 1 (a = 1), so bisection finds the one root."""
    if k < 1:
        raise ValueError(f"K must be 1 or more, got {k}")
    if not 1 <= mean_length <= k + 1:
        raise ValueError(f"a mean acceptance length at K = {k} lies between 1 and {k + 1}, got {mean_length:.4g}")
    if mean_length == k + 1:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(60):  # 2^-60: far below any counter's resolution
        mid = (lo + hi) / 2
        # the sum itself, not the closed form: near a = 1 (1 - a^(K+1)) / (1 - a) loses its digits
        lo, hi = (mid, hi) if sum(mid**i for i in range(k + 1)) < mean_length else (lo, mid)
    return (lo + hi) / 2


def k_that_pays(alpha: float, verify_growth: float, draft_cost: float, k_max: int,
                cut: list[float] | None = None) -> list[dict]:  # fmt: skip
    """Per K = 1..k_max: the tokens a round emits at acceptance ``alpha``, what the round costs in one-token
    target passes, v(K) = 1 + verify_growth * K to verify K + 1 tokens plus draft_cost * K to draft them,
    and the speedup over plain decoding (one pass a token), E[tokens] / (c K + v(K)). With ``cut``
    (VllmSpecStats.cut_lengths), also the speedup of vLLM's own rounds cut to K tokens, where K is within them."""
    if not 0 <= alpha <= 1:
        raise ValueError(f"α must be between 0 and 1, got {alpha}")
    if not (verify_growth >= 0 and draft_cost >= 0):
        raise ValueError("the verify growth and the draft cost must be 0 or more")
    if not 1 <= k_max <= MAX_POSITIONS:
        raise ValueError(f"the largest K must be between 1 and {MAX_POSITIONS}, got {k_max}")
    rows = []
    for k in range(1, k_max + 1):
        tokens, cost = expected_tokens_per_round(alpha, k), 1 + verify_growth * k + draft_cost * k
        measured = cut[k - 1] if cut and k <= len(cut) else None
        rows.append({"k": k, "expected": tokens, "cost": cost, "speedup": tokens / cost, "measured": measured,
                     "measured_speedup": None if measured is None else measured / cost})  # fmt: skip
    return rows


def read_text(data: bytes | str) -> str:
    """An uploaded file's bytes as text; a SnapshotError if it is too large or not UTF-8."""
    if len(data) > MAX_BYTES:
        raise SnapshotError(
            f"the snapshot is {len(data):,} bytes; a /metrics page is far smaller (at most {MAX_BYTES:,})"
        )
    if isinstance(data, str):
        return data.removeprefix("\ufeff")
    try:
        return data.decode("utf-8-sig")  # a byte-order mark, as some Windows editors save, is dropped
    except UnicodeDecodeError as e:
        raise SnapshotError(f"the file is not UTF-8 text (byte {e.start}): save /metrics as text") from None


def _families(text: str) -> list:
    """Every metric family of ``text``; a SnapshotError naming the first line the parser refuses."""
    try:
        return list(text_string_to_metric_families(text))
    except ValueError as whole:
        for n, line in enumerate(text.split("\n"), 1):  # lines as the parser splits them
            try:
                list(text_string_to_metric_families(line + "\n"))
            except ValueError as e:
                why = str(e) or "not a Prometheus sample (name{labels} value)"
                raise SnapshotError(f"line {n} is not Prometheus text ({why}): {cut(line, 80)}") from None
        raise SnapshotError(f"not Prometheus text: {whole or 'the parser refused it'}") from None


def _value(name: str, labels: dict, value: float) -> float:
    if not (math.isfinite(value) and value >= 0):
        raise SnapshotError(f"{name}{cut(labels, 60)} is {value}: a counter is a finite number, 0 or more")
    return value


def parse_snapshot(text: str) -> VllmSpecStats:
    """The speculative-decoding counters of a vLLM /metrics snapshot, summed over label sets."""
    totals = {DRAFTS: 0.0, DRAFT_TOKENS: 0.0, ACCEPTED: 0.0}
    seen: dict[str, set] = {name: set() for name in (*totals, PER_POS)}
    per_pos: dict[int, float] = {}
    sets, models = set(), []
    for family in _families(text):
        for s in family.samples:
            if s.name not in seen:
                continue
            key = tuple(sorted(s.labels.items()))
            if key in seen[s.name]:
                raise SnapshotError(f"{s.name} appears twice with the labels {cut(s.labels, 60)}")
            seen[s.name].add(key)
            value = _value(s.name, s.labels, s.value)
            rest = {k: v for k, v in s.labels.items() if k != "position"}
            sets.add(tuple(sorted(rest.items())))
            if (m := s.labels.get("model_name")) is not None and m not in models:
                models.append(m)
            if s.name != PER_POS:
                totals[s.name] += value
                continue
            pos = s.labels.get("position", "")
            if not (pos.isascii() and pos.isdigit() and int(pos) < MAX_POSITIONS):  # "²" is a digit too
                raise SnapshotError(f"{PER_POS} has position={cut(pos, 20)}: positions are 0 to {MAX_POSITIONS - 1}")
            per_pos[int(pos)] = per_pos.get(int(pos), 0.0) + value
    if not seen[DRAFTS]:
        raise SnapshotError(f"no {DRAFTS} in the text: is this vLLM's /metrics, from a server run with speculative decoding?")  # fmt: skip
    for name in (DRAFT_TOKENS, ACCEPTED):
        if not seen[name]:
            raise SnapshotError(f"{DRAFTS} is there but {name} is not: the snapshot is cut short")
    drafts, draft_tokens, accepted = totals[DRAFTS], totals[DRAFT_TOKENS], totals[ACCEPTED]
    if drafts == 0:
        raise SnapshotError("the server has verified no draft yet (0 drafts): send it some requests, then save /metrics again")  # fmt: skip
    if accepted > draft_tokens:
        raise SnapshotError(f"{accepted:g} accepted tokens but {draft_tokens:g} drafted: the counters disagree")
    positions = sorted(per_pos)
    if positions and positions != list(range(len(positions))):
        missing = sorted(set(range(positions[-1] + 1)) - set(positions))
        raise SnapshotError(f"{PER_POS} has no position {missing[0]}, but has position {positions[-1]}")
    counts = [per_pos[i] for i in positions]
    if any(b > a for a, b in zip([drafts, *counts], counts, strict=False)):
        raise SnapshotError(f"{PER_POS} rises with position: a round reaches position i + 1 only through i")
    stats = VllmSpecStats(drafts, draft_tokens, accepted, counts, len(sets), models)
    if accepted > stats.k * drafts:
        raise SnapshotError(f"{accepted:g} accepted tokens in {drafts:g} rounds of at most K = {stats.k}: the counters disagree")  # fmt: skip
    return stats


def load_example() -> str:
    return EXAMPLE.read_text()
