"""The bench's rows: plain dicts with ``BenchRow``'s fields, and their file format, JSON lines:
``rows_to_jsonl`` / ``rows_from_jsonl`` are what the CLI writes and the app's Drafter shoot-out page
reads. What the suites mean: specviz/bench/runner.py."""

import json
import math
import typing
from dataclasses import dataclass

from specviz.verifiers import LOSSLESS


@dataclass
class BenchRow:
    impl: str  # "specviz" or "transformers"
    # "main" or "vs-transformers" (see specviz/bench/runner.py); "batch" (specviz/bench/batch.py); "llm" (a real
    # model, specviz/bench/llm.py); a fixed tree shape's name, "sequoia": a shaped drafter with that shape,
    # timed among the main suite's runs
    suite: str
    drafter: str  # "none" is the baseline (plain KV-cached decoding, or transformers' greedy generate)
    temperature: float
    k: int  # the draft depth K; with k_auto, the largest K adaptive K may choose
    k_auto: bool  # adaptive K (--k auto): each drafter's default configuration
    verification: str  # the verification rule (specviz.verifiers): "lossless" or "block"
    prompts: int  # prompts in the set
    new_tokens: int  # new tokens asked per prompt
    repeats: int
    tokens: int  # tokens generated over the prompt set, in one repeat
    target_forwards: int  # target forward passes that produced tokens (prefill excluded), one repeat
    tokens_per_forward: float  # the ideal speedup if drafting and verifying K+1 tokens were free
    acceptance_rate: float | None  # accepted / drafted tokens checked; None with nothing drafted
    seconds: float  # wall time of one repeat over the prompt set (median)
    tokens_per_s: float  # tokens / seconds (median over repeats)
    speedup: float  # over the baseline of the same suite and repeat (median over repeats)
    fraction_of_ideal: float | None  # speedup / tokens_per_forward: how much of the ideal is kept
    draft_s: float | None  # time drafting, one repeat (median); None for transformers
    verify_s: float | None  # time in the target's verification passes
    accept_s: float | None  # time accepting, trimming the cache and recording
    draft_cost: float | None  # time per drafted token / time per baseline forward pass (c)
    verify_cost: float | None  # time per verification pass / time per baseline forward pass
    accept_cost: float | None  # bookkeeping: time accepting, trimming and recording per round / per baseline forward
    same_as_baseline: bool | None  # temperature 0: the same tokens as the baseline; else None
    tau_same_lossless: float | None  # block rows: 1 + mean expected accepted per round, token-wise, same drafts
    tau_same_block: float | None  # block rows: the same under block verification (its expectation, not its draws)
    tau_same_traversal: float | None  # traversal rows: the same under traversal verification, same drafts
    threads: int  # torch.get_num_threads() during the run
    load_average: float | None  # the machine's 5-minute load average when the run ended (os.getloadavg)
    version: str  # "specviz (torch 2.13.0+cpu; few-rows kernels (...))" or "transformers 5.23.0 (torch ...)"
    # What the drafter adds to plain decoding after one round (specviz.bench.memory); None: theirs.
    memory_mb: float | None
    # Main-suite baseline rows: its second run in each repeat over its first (median), the A/A "speedup"
    # that noise alone gives (specviz/bench/runner.py); None on every other row.
    aa_speedup: float | None = None
    # Main suite: "faster", "slower" or "tie" against the baseline, from a sign test over the paired runs
    # (specviz/bench/report.py; the baseline's row: its A/A pairs), and that test's two-sided p-value.
    verdict: str | None = None
    verdict_p: float | None = None
    # The machine's CPU (specviz.adaptive.costs.cpu_name): figures differ from one CPU to another.
    cpu: str | None = None
    # Adaptive-K rows: the cost curve adaptive K priced drafts with (CostCurve.summary); None on the others.
    costs: str | None = None
    # The run-to-run spread: the lowest and highest of the repeats' speedups (the row's is their median).
    speedup_min: float | None = None
    speedup_max: float | None = None
    # The day the run ended (ISO, UTC): a stored run names when and where (cpu) it was measured.
    date: str | None = None
    # Suite "batch" (specviz/bench/batch.py): the sequences decoded together (``prompts`` too), and the rows a
    # target pass carried on average over the whole batch; None on the other suites.
    batch: int | None = None
    rows_per_pass: float | None = None
    # Suite "llm" (specviz/bench/llm.py): the prompt's name for a row of one prompt; None over the whole set.
    prompt: str | None = None
    # Suites "llm" and "batch" on a real model (bench --model): its name; None: the character model.
    model: str | None = None
    # Suite "batch": requests per slot, a finished sequence's slot taking the next (bench/batch.py WAVES); None or
    # 1: one request a slot, the batch drains
    waves: int | None = None
    # Suite "batch", while every slot held a sequence (the run up to the first round a slot sat idle: a server's
    # steady state at this batch size, before the last requests drain): tokens/s over plain decoding's (median,
    # lowest, highest over repeats), and plain decoding's A/A of it on its own row. None: not measured.
    busy_speedup: float | None = None
    busy_min: float | None = None
    busy_max: float | None = None
    aa_busy: float | None = None


def rows_to_jsonl(rows: list[dict]) -> str:
    """One JSON object per line, keys in BenchRow order."""
    return "".join(json.dumps(r) + "\n" for r in rows)


# fields added later: older files lack them
OPTIONAL = {"k_auto": False, "load_average": None, "verification": LOSSLESS, "tau_same_lossless": None,
            "tau_same_block": None, "tau_same_traversal": None, "memory_mb": None, "aa_speedup": None,
            "verdict": None, "verdict_p": None, "accept_cost": None, "cpu": None, "costs": None, "speedup_min": None, "speedup_max": None,
            "date": None, "batch": None, "rows_per_pass": None, "prompt": None, "model": None,
            "waves": None, "busy_speedup": None, "busy_min": None, "busy_max": None, "aa_busy": None}  # fmt: skip


def _field_error(name: str, kind, value) -> str | None:
    """Why ``value`` cannot be BenchRow's field ``name`` of type ``kind``; None when it can."""
    kinds = typing.get_args(kind) or (kind,)
    if value is None:
        return None if type(None) in kinds else f"{name} is null"
    ok = any(
        (k is float and isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value))
        or (k is int and isinstance(value, int) and not isinstance(value, bool))
        or (k in (str, bool) and isinstance(value, k))
        for k in kinds
    )
    return None if ok else f"{name} is {json.dumps(value)[:30]}, not {' or '.join(k.__name__ for k in kinds)}"


def rows_from_jsonl(text: str) -> list[dict]:
    """Parse rows written by rows_to_jsonl; ValueError (with the line number) on a bad line:
    not JSON, not an object, a field missing, or a field of the wrong type (numbers finite)."""
    kinds = typing.get_type_hints(BenchRow)
    rows = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as e:
            raise ValueError(f"line {i} is not JSON: {getattr(e, 'msg', 'nested too deep')}") from None
        row = OPTIONAL | row if isinstance(row, dict) else row  # older files lack the newer fields
        missing = kinds.keys() - set(row) if isinstance(row, dict) else kinds.keys()
        if missing:
            raise ValueError(f"line {i} is not a benchmark row: missing {', '.join(sorted(missing))}")
        for name, kind in kinds.items():
            if why := _field_error(name, kind, row[name]):
                raise ValueError(f"line {i} is not a benchmark row: {why}")
        rows.append(row)
    if not rows:
        raise ValueError("no benchmark rows")
    return rows
