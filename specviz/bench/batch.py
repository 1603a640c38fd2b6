"""Speculation under load: plain decoding and a few drafters, each decoding B sequences together
(specviz/core/batch.py: one target pass a round for the whole batch), at each batch size B. What it
shows: at B = 1 a pass is bound by reading the weights, so the K extra rows of a draft ride along almost
free; as B grows the pass over B (K + 1) rows becomes bound by arithmetic, the extra rows cost what they
weigh, and speculation stops paying. The batch size where a drafter's speedup falls below 1 is its
crossover (``crossover``).

The runs are interleaved round by round (``interleaved``): for each repeat, for each batch size, every
configuration's batch is made, then each round every batch not yet done runs one of its rounds, in a shuffled
order (seeded), and each is timed in its own rounds only; a configuration's speedup in a repeat is plain
decoding's time at that batch size over its own, and the row reports the median over repeats. Plain decoding
also runs a second time in each repeat, interleaved with the rest (an A/A pair, as the main bench's): its row's
``aa_speedup`` is what noise alone gives a ratio at that batch size. Sequence i of a
batch decodes prompt i of the presets (cycled) with seed + i. On one thread a run is timed in the thread's
CPU time, not wall time (adaptive/load.py ``clock``): on a machine shared with other jobs, wall time counts
their slices of the core too, and the rows' version says which clock timed them. Rows are BenchRows of
suite "batch" (specviz/bench/rows.py), with ``batch`` and ``rows_per_pass`` (decoding rows: the prefills'
rows left out); the roofline beside them:
specviz/bench/roofline.py.
"""

import datetime
import gc
import math
import os
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict

import torch

from models.checkpoint import Checkpoint
from specviz.adaptive.costs import REFERENCE, cpu_name
from specviz.adaptive.load import BATCHES as LOAD_BATCHES
from specviz.adaptive.load import CONTEXT, LOADED_FROM, ROWS, LoadCosts, LoadCurve, clock, measure_drafting
from specviz.adaptive.policy import AUTO_K_MAX
from specviz.bench.report import VERDICT_P, paired_verdict
from specviz.bench.rows import BenchRow
from specviz.bench.timing import bench_settings, quiet_heap
from specviz.core.batch import Batch
from specviz.core.engine import Generation
from specviz.core.settings import Settings
from specviz.drafters import BASELINE, drafter_class, drafter_names
from specviz.drafters.base import Drafter, chain
from specviz.kernels import native
from specviz.teaching.presets import PRESETS
from specviz.verifiers import LOSSLESS

BATCHES = (1, 2, 4, 8, 16, 32, 64)
AGAIN = "A/A"  # plain decoding's second run at each batch size: what noise alone does to a ratio
# Requests per slot: B slots serve WAVES x B requests, a finished sequence's slot taking the next (as a server
# does), so a sequence that drafts and finishes early gains its slot back; only the last wave drains.
WAVES = 3
DRAFTERS = drafter_names(under_load=True)  # the distilled table, an n-gram, a neural head on the target


class _FixedChain(Drafter):
    """measure_load's drafter, never registered: the next n - 1 tokens of the sequence's own greedy text
    (``greedy``: its prompt -> prompt and greedy continuation), whatever K. At T = 0 every one is accepted, so a
    round pays its accept walk, trim and record at their longest; drafting itself costs nothing here (it is
    priced on its own: measure_drafting)."""

    n = 0
    greedy: dict[tuple, list[int]] = {}

    def draft(self, context, k, temperature, gen):
        text = self.greedy[tuple(context[:CONTEXT])]
        return chain(text[len(context) : len(context) + min(self.n, k)])


ROUNDS = 2  # rounds per timed unit in measure_load: a lone round is ~1 ms, at the clock's noise


def _round(batch, fixed: _FixedChain, n: int, now: Callable[[], float]) -> float:
    fixed.n = n - 1
    t0 = now()
    for _ in range(ROUNDS):
        batch.step()
    return now() - t0


def measure_load(target, batches=LOAD_BATCHES, rows=ROWS, repeats: int = 3, seed: int = 0, progress=None) -> LoadCurve:
    """Time whole engine rounds (core/batch.py: every sequence's draft, one pass, every sequence's accept and
    trim) at each batch size, every sequence sending N rows (a chain of its next N - 1 greedy tokens, all
    accepted: _FixedChain), at T = 0 on the character model ``target`` (a Checkpoint), with the threads
    torch has now. Ratios, as costs.measure: each N between two one-row rounds at the same B, and each B's
    one-row round between two lone ones (the machine's speed drifts, a ratio far less); medians over
    ``repeats``, B and N shuffled each repeat. Each repeat starts fresh sequences of CONTEXT prompt tokens.
    ``progress(done, total)`` after every batch size."""
    if 1 not in batches or 1 not in rows:
        raise ValueError("measure_load needs B = 1 and N = 1 among its sizes")
    prompts = [p for p in (target.tokenizer.encode(p.text) for p in PRESETS) if len(p) >= CONTEXT] or [
        target.tokenizer.encode(PRESETS[0].text) * CONTEXT
    ]
    # the tokens a fresh batch's rounds emit in one repeat: each round's N (its draft accepted, and a bonus)
    emitted = ROUNDS * (4 + sum(rows) + 2 * len(rows)) + max(rows)
    settings = Settings(drafter=BASELINE, k=max(rows), temperature=0, max_new_tokens=emitted)
    fixed = _FixedChain()
    starts = list({tuple(p[:CONTEXT]): None for p in prompts})
    plain = Batch([Generation(target, list(p), settings) for p in starts]).run()  # untimed: the texts to draft
    fixed.greedy = {p: [*p, *t.tokens] for p, t in zip(starts, plain, strict=True)}

    def fresh(B: int) -> Batch:
        gens = [Generation(target, prompts[i % len(prompts)][:CONTEXT], settings, drafter=fixed) for i in range(B)]
        for g in gens:
            g.target.sync(g.tokens)
        return Batch(gens)

    now, order = clock(), random.Random(seed)
    share = {b: [] for b in batches}
    ratio = {b: {n: [] for n in rows} for b in batches}
    done, total = 0, repeats * len(batches)
    gc.collect()
    gc.disable()  # a collection inside a timed round would be charged to it
    try:
        _round(fresh(max(batches)), fixed, max(rows), now)  # warm every code path once
        for _ in range(repeats):
            for B in order.sample(list(batches), len(batches)):
                batch, alone = fresh(B), fresh(1)
                _round(batch, fixed, 1, now)
                before, t, after = (
                    _round(alone, fixed, 1, now),
                    _round(batch, fixed, 1, now),
                    _round(alone, fixed, 1, now),
                )
                share[B].append(2 * t / (B * (before + after)))
                for n in order.sample(list(rows), len(rows)):
                    before, t, after = (
                        _round(batch, fixed, 1, now),
                        _round(batch, fixed, n, now),
                        _round(batch, fixed, 1, now),
                    )
                    ratio[B][n].append(2 * t / (before + after))
                done += 1
                if progress:
                    progress(done, total)
    finally:
        gc.enable()
    share = {b: statistics.median(s) for b, s in share.items()}
    share[1] = 1.0  # by definition: a lone plain round is the unit
    ratio = {b: {n: 1.0 if n == 1 else statistics.median(r) for n, r in rs.items()} for b, rs in ratio.items()}
    threads = torch.get_num_threads()
    return LoadCurve(share, ratio, f"measured on {cpu_name()}, {threads} thread{'s' * (threads > 1)}")


def batch_run(target, tiny, prompts, config, B, T, n, seed, load: LoadCosts | None = None, waves: int = 1) -> dict:
    """One timed batch of B slots serving ``waves`` x B requests of n tokens: as a sequence is done, the next
    request takes its place (continuous batching), so a sequence that finishes early frees its slot for more
    work, as on a server; the last wave drains. Timed alone: ``interleaved`` times several such batches round by
    round."""
    return interleaved([served(target, tiny, prompts, config, B, T, n, seed, load, waves)])[0]


def served(target, tiny, prompts, config, B, T, n, seed, load: LoadCosts | None = None,
           waves: int = 1) -> tuple[Batch, list[Generation]]:  # fmt: skip
    """A batch_run's batch and its queue, ready to run. The generations, their drafters and their prompts' caches
    are made here, before the clock starts: decoding is what batching and speculation change, and a prompt's
    prefill, the same for every configuration, would only dilute the ratios (a window jump's re-prefill, inside
    the decoding, is timed)."""
    drafter, k, auto = config
    draft_model = tiny.model if tiny is not None and "draft_model" in drafter_class(drafter).needs else None
    base = load.base if load is not None else REFERENCE
    gens = [Generation(target, prompts[i % len(prompts)], bench_settings(drafter, T, k, n, seed + i, auto),
                       draft_model, costs=base) for i in range(B * waves)]  # fmt: skip
    for g in gens:
        g.target.sync(g.tokens)
    batch = Batch(gens[:B], load if auto else None)
    batch.clock = clock()
    return batch, gens[B:]


def interleaved(runs: list[tuple], order: random.Random | None = None) -> list[dict]:
    """Run ``served`` batches round by round: each round, every batch not yet done runs one (``order``
    shuffles them, each round), and each is timed in its own rounds only. So every configuration meets the
    machine as it is within milliseconds of the others, where one batch after another meets it seconds apart
    (a shared machine's speed drifts by tens of percent over seconds; docs/notes/batch.md). -> one batch_run
    dict per batch"""
    quiet_heap()
    live = list(runs)
    while live:
        for batch, queue in order.sample(live, len(live)) if order else live:
            batch.admit(queue)
            batch.step()
        live = [(b, q) for b, q in live if q or not b.done]
    out = []
    for batch, queue in runs:
        batch.admit(queue)  # sets ``busy`` where every pass ran full
        traces = [g.trace for g in batch.generations]
        sums = [t.summary() for t in traces]
        total = lambda key, sums=sums: sum(s[key] for s in sums)  # noqa: E731
        out.append({"seconds": batch.elapsed, "tokens": sum(len(t.tokens) for t in traces),
                    "rounds": total("target_forwards"), "passes": batch.passes, "rows": sum(batch.rows) - batch.prefilled,
                    "tried": total("tried"), "accepted": total("accepted"), "busy_s": batch.busy[0],
                    "busy_tokens": batch.busy[1], "pass_s": batch.pass_s,
                    "draft_s": sum(r.draft_s for t in traces for r in t.rounds),
                    "accept_s": sum(r.accept_s for t in traces for r in t.rounds),
                    "outputs": [t.tokens for t in traces]})  # fmt: skip
    return out


def drafting_costs(target, tiny, drafters, T: float, seed: int = 0) -> dict:
    """Drafter name -> what its drafting costs on this CPU (adaptive/load.py, measure_drafting): its draft of
    k tokens from a preset's first CONTEXT tokens, against a lone plain round, alone and followed by the drafts
    of LOADED_FROM - 1 more sequences (other presets), as a batch drafts; untimed by the bench."""
    prompts = [target.tokenizer.encode(p.text)[:CONTEXT] for p in PRESETS]
    out = {}
    with torch.inference_mode():
        for d in drafters:
            plain = Generation(target, prompts[0], bench_settings(BASELINE, T, 1, 4096, seed))
            draft_model = tiny.model if tiny is not None and "draft_model" in drafter_class(d).needs else None
            gens = [Generation(target, prompts[i % len(prompts)], bench_settings(d, T, AUTO_K_MAX, 64, seed),
                               draft_model) for i in range(LOADED_FROM)]  # fmt: skip
            for g in gens:
                g.target.sync(g.tokens)
            first, *others = [lambda k, g=g: g.drafter.draft(g.tokens, k, T, g.gen) for g in gens]
            out[d] = measure_drafting(first, plain.step, others=others)
    return out


def run_batch_bench(target: Checkpoint, tiny: Checkpoint | None, batches=BATCHES, drafters=DRAFTERS, k: int = 4,
                    temperature: float = 0.0, max_new_tokens: int = 64, repeats: int = 3, seed: int = 0,
                    progress=None, load: LoadCosts | None = None, texts: list[str] | None = None,
                    model: str | None = None, waves: int = WAVES) -> list[dict]:  # fmt: skip
    """One row per (batch size, configuration): plain decoding first, then each drafter at K = ``k``, and with
    ``load`` (specviz/adaptive/load.py) each drafter with adaptive K (up to AUTO_K_MAX) priced for the batch.
    ``texts``: the prompts (default: the presets'); ``model``: a real model's name (--model), which its rows
    carry (``target`` is then its LLMCheckpoint). ``waves``: requests per slot (batch_run). ``progress(done,
    total)`` after every timed batch."""
    if not batches or min(batches) < 1 or repeats < 1:
        raise ValueError("the batch bench needs batch sizes of at least 1 and one repeat")
    bench_settings(BASELINE, temperature, k, max_new_tokens, seed).check()
    prompts = [target.tokenizer.encode(t) for t in (texts or [p.text for p in PRESETS])]
    drafters = [d for d in dict.fromkeys(drafters) if d != BASELINE]
    configs = [(BASELINE, k, False)] + [(d, k, False) for d in drafters]
    configs += [(d, AUTO_K_MAX, True) for d in drafters if load is not None]
    order, runs, again = random.Random(seed), {}, {}
    total, done = repeats * len(batches) * (len(configs) + 1), 0
    for c in configs:  # untimed: each drafter's tables and heads loaded before the first timed batch
        batch_run(target, tiny, prompts, c, 1, temperature, 4, seed, load)
    if load is not None:  # adaptive K prices drafting as it costs here (measured once, before the clock)
        missing = [d for d in drafters if d not in load.drafting]
        load.drafting |= drafting_costs(target, tiny, missing, temperature, seed)
    try:
        for _ in range(repeats):
            for B in batches:
                # every configuration, and plain decoding a second time (the A/A pair), round by round
                made = [served(target, tiny, prompts, configs[0] if c == AGAIN else c, B, temperature,
                               max_new_tokens, seed, load, waves) for c in [*configs, AGAIN]]  # fmt: skip
                for c, out in zip([*configs, AGAIN], interleaved(made, order), strict=True):
                    (again.setdefault(B, []) if c == AGAIN else runs.setdefault((B, c), [])).append(out)
                del made  # before the next batch size's are made: one set of caches held at a time
                done += len(configs) + 1
                if progress:
                    progress(done, total)
    finally:
        gc.unfreeze()
    timed = "thread CPU time" if clock() is time.thread_time else "wall time"
    version = f"specviz (torch {torch.__version__}; {native.backend()}; timed in {timed})"
    loadavg, cpu = round(os.getloadavg()[1], 2), cpu_name()
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    rows = []
    for (B, (d, kd, auto)), reps in runs.items():
        base = runs[(B, configs[0])]
        ratios = [b["seconds"] / r["seconds"] for b, r in zip(base, reps, strict=True)]
        busy = [_busy_rate(r) / _busy_rate(b) for b, r in zip(base, reps, strict=True)]
        # vs plain decoding in the same repeat, while every slot was busy (the A/A pairs for plain decoding's row)
        paired = again[B] if (d, kd, auto) == configs[0] else reps
        said, p = paired_verdict([(1 / _busy_rate(b), 1 / _busy_rate(r)) for b, r in zip(base, paired, strict=True)])
        first = reps[0]  # counts are the same in every repeat: same seeds, same work
        tau = first["tokens"] / first["rounds"]
        med = lambda key, reps=reps: statistics.median(r[key] for r in reps)  # noqa: E731
        same = first["outputs"] == base[0]["outputs"] if temperature == 0 else None
        row = BenchRow(
            impl="specviz", suite="batch", drafter=d, temperature=temperature, k=kd, k_auto=auto,
            verification=LOSSLESS, prompts=B, new_tokens=max_new_tokens, repeats=repeats, tokens=first["tokens"],
            target_forwards=first["passes"], tokens_per_forward=tau,
            acceptance_rate=first["accepted"] / first["tried"] if first["tried"] else None,
            seconds=med("seconds"), tokens_per_s=statistics.median(r["tokens"] / r["seconds"] for r in reps),
            speedup=statistics.median(ratios), fraction_of_ideal=statistics.median(ratios) / tau,
            draft_s=med("draft_s"), verify_s=med("pass_s"), accept_s=med("accept_s"), draft_cost=None,
            verify_cost=None, accept_cost=None, verdict=said, verdict_p=p, same_as_baseline=same, tau_same_lossless=None, tau_same_block=None,
            tau_same_traversal=None, threads=torch.get_num_threads(), load_average=loadavg, version=version,
            memory_mb=None, cpu=cpu, costs=load.describe(d) if auto else None, speedup_min=min(ratios), speedup_max=max(ratios), date=today, batch=B,
            rows_per_pass=first["rows"] / first["passes"], model=model, waves=waves,
            aa_speedup=statistics.median(a["seconds"] / b["seconds"] for a, b in zip(reps, again[B], strict=True))
            if (d, kd, auto) == configs[0] else None,
            busy_speedup=statistics.median(busy), busy_min=min(busy), busy_max=max(busy),
            aa_busy=statistics.median(_busy_rate(a) / _busy_rate(b) for a, b in zip(again[B], reps, strict=True))
            if (d, kd, auto) == configs[0] else None,
        )  # fmt: skip
        rows.append(asdict(row))
    rows.sort(key=lambda r: (r["batch"], configs.index((r["drafter"], r["k"], r["k_auto"]))))
    return rows


def _busy_rate(run: dict) -> float:
    """A batch_run's tokens/s while every slot held a sequence (Batch.run's ``busy``)."""
    return run["busy_tokens"] / run["busy_s"]


def crossover(rows: list[dict], drafter: str, auto: bool = False, model: str | None = None) -> float | None:
    """The batch size where ``drafter``'s speedup on ``model`` (None: the character model) falls through 1
    (interpolated in log2 B between the last batch size where it paid and the first where it did not); None
    if it never fell, or never paid."""
    pts = sorted((r["batch"], r["speedup"]) for r in rows if r.get("suite") == "batch" and r["drafter"] == drafter
                 and r.get("k_auto", False) == auto and r.get("model") == model)  # fmt: skip
    for (b0, s0), (b1, s1) in zip(pts, pts[1:], strict=False):
        if s0 >= 1 > s1:
            f = (s0 - 1) / (s0 - s1)
            return 2 ** (math.log2(b0) + f * (math.log2(b1) - math.log2(b0)))
    return None


def llm_drafters(k: int) -> list[str]:
    """The drafters the batch bench times on a real model: those it times on the character model that run on
    word pieces (Drafter.bpe: the token trigram), and those a serving engine has a counterpart of (Drafter.peer:
    prompt lookup, vLLM's n-gram), none that needs a draft model."""
    out = []
    for d in drafter_names(bpe=True, drafts=True):
        cls = drafter_class(d)
        if "draft_model" not in cls.needs and (d in DRAFTERS or cls.peer(k) is not None):
            out.append(d)
    return out


def mean_context(target: Checkpoint, max_new_tokens: int) -> float:
    """The cache entries a sequence's round attends to, on average over the bench's prompts and tokens: its
    prompt and half its new tokens, within the window (the roofline's keys and values per sequence)."""
    lengths = [len(target.tokenizer.encode(p.text)) + max_new_tokens / 2 for p in PRESETS]
    return statistics.mean(min(n, target.config.block_size) for n in lengths)


def per_round_cpu(row: dict) -> float:
    """Seconds a sequence's round costs beside the target pass (drafting, accepting, the engine's own
    steps), from a row at B = 1: its time less its passes', per round."""
    rounds = row["tokens"] / row["tokens_per_forward"]
    return max(0.0, row["seconds"] - row["verify_s"]) / rounds


def _span(low: float, high: float) -> str:
    return f"{low:.2f}-{high:.2f}"


def batch_table(rows: list[dict]) -> str:
    """The batch bench's rows as a text table: per batch size and configuration, tokens/s, speedup over
    plain decoding at the same batch (median, min-max over repeats) over the whole queue and, where measured,
    while every slot was busy (Batch.run's ``busy``), tau and the rows a pass carried."""
    busy = all(r.get("busy_speedup") is not None for r in rows)
    said = all(r.get("verdict") for r in rows)  # the busy sign test's verdicts (rows of runs before it: none)
    lines = [f"{'batch':>5}  {'drafter':<14} {'tokens/s':>9} {'speedup':>8} {'min-max':>11} "
             + (f"{'busy':>5} {'min-max':>11} " if busy else "") + (f"{'vs plain':>8} " if said else "")
             + f"{'tau':>5} {'rows/pass':>9}"]  # fmt: skip
    for r in rows:
        spread = _span(r["speedup_min"], r["speedup_max"])
        name = f"{r['drafter']} auto" if r.get("k_auto") else r["drafter"]
        steady = f"{r['busy_speedup']:>5.2f} {_span(r['busy_min'], r['busy_max']):>11} " if busy else ""
        steady += f"{r['verdict']:>8} " if said else ""
        lines.append(f"{r['batch']:>5}  {name:<14} {r['tokens_per_s']:>9.0f} {r['speedup']:>8.2f} "
                     f"{spread:>11} {steady}{r['tokens_per_forward']:>5.2f} {r['rows_per_pass']:>9.1f}")  # fmt: skip
    aa = [f"B={r['batch']} {r['aa_speedup']:.2f}" + (f" (busy {r['aa_busy']:.2f})" if busy else "")
          for r in rows if r.get("aa_speedup") is not None]  # fmt: skip
    if aa:
        lines.append("plain decoding against itself (A/A, what noise alone gives): " + ", ".join(aa))
    first = rows[0]
    lines.append(f"{first['cpu']}, {first['threads']} thread(s), load average {first['load_average']}, "
                 f"{first['new_tokens']} tokens a sequence, {first.get('waves') or 1} request(s) a slot, "
                 f"T = {first['temperature']:g}, K = {first['k']}, "
                 f"median of {first['repeats']} interleaved repeats")  # fmt: skip
    if busy:
        lines.append(
            "busy: while every slot held a sequence (a server's steady state at this batch size); "
            "speedup: the whole queue, its drain included"
        )
    if said:
        lines.append(
            f"vs plain: faster, slower or tie against plain decoding in the same repeat while every slot was busy, by "
            f"a sign test (p < {VERDICT_P:g}) over the {first['repeats']} pairs; plain decoding's row: its A/A pairs"
        )
    return "\n".join(lines) + "\n"
