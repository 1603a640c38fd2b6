"""How much faster is speculative decoding, really? Every drafter against the KV-cached baseline,
measured side by side in one run, through exactly the engine the app uses (``Generation.run``).

Timing on a shared 2-core machine is noisy, so the runs are interleaved: for each repeat, for
each temperature, for each prompt, every drafter runs once, back to back, in a shuffled order
(seeded: the same for the same seed). A drafter's speedup
in a repeat is the baseline's time over its time *in that repeat*; the row reports the median
over repeats. Greedy (temperature 0) outputs must equal the baseline's token for token; each
row says whether they did.

A row's ``verification`` names the rule that verified it. Besides the lossless rows, with
``block=True`` every chain drafter also runs with block verification (Sun et al. 2024) at the
sampled temperatures (at temperature 0 block verification keeps the matched prefix: the same
tokens as token-wise). A block-verified run records, for each of its drafts, the expected accepted
tokens under both rules, so its row also says what each rule makes of the same drafts:
``tau_same_lossless`` and ``tau_same_block`` = 1 + the mean over rounds of those expectations.
Likewise, with ``traversal=True`` every tree drafter also runs with traversal verification (Weng
et al. 2025) at the sampled temperatures: ``tau_same_lossless`` and ``tau_same_traversal``.

With ``lossy=True`` the lossy methods of the atlas (specviz/teaching/atlas.py: seed 004's correction rule on NASD's
drafts, Medusa's typical acceptance) run too, at the sampled temperatures: what a rule that changes the
output buys in speed, beside the lossless rows of the same drafter.

Two suites, told apart by the row's ``suite``:

    main             every drafter, the whole prompt set, ``max_new_tokens`` each; past the
                     model's 256 positions the engine slides its context window
    vs-transformers  our baseline and prompt lookup against transformers' greedy ``generate``
                     and its prompt-lookup decoding, same weights, temperature 0. A GPT-2 with
                     n_positions=256 cannot slide a window, so here n = min(max_new_tokens, 128)
                     tokens are generated after each prompt cut to its last 256 - n - K tokens
                     (transformers' prompt lookup verifies up to K positions past the end): prompt
                     and output fit in one window, for both implementations alike.

How far from 1.00 must a speedup be to be real? In each repeat the baseline runs once more for
every prompt, shuffled in with the others, and the main suite's baseline rows report that second run's
speedup over the first (``aa_speedup``, an A/A test: the same work twice). A drafter whose
speedup is as close to 1 as that cannot be told from the baseline. Each main-suite row also says
so itself (``verdict``): its runs are paired with the baseline's (same repeat, same prompt), and a
two-sided sign test over the pairs (``verdict_p``) calls it faster or slower below p = 0.01, a tie
otherwise. The baseline's own row pairs its two runs: the A/A test's verdict, which should be a tie.

Python's garbage collector: before each timed run, the garbage the runs before it left is collected
and every object alive is frozen (``gc.freeze``), so a full collection that falls in a run scans only
that run's own objects. Otherwise it scans the whole process (the corpus indexes, the tables, every
drafter's state): a small bench (4 prompts, 128 tokens) had 4 of them in 53 s, ~77 ms each, a quarter
of a 256-token run, charged to whichever run they fell in. The heap is unfrozen when the bench ends.

Rows are plain dicts (``BenchRow`` fields); ``rows_to_jsonl`` / ``rows_from_jsonl`` are the
file format the CLI writes and the app's Drafter shoot-out page reads.
"""

import gc
import json
import math
import os
import random
import statistics
import time
import typing
from dataclasses import asdict, dataclass

import torch

from models.checkpoint import Checkpoint
from specviz.adaptive.costs import REFERENCE, CostCurve, cpu_name
from specviz.adaptive.policy import AUTO_K_MAX
from specviz.bench.memory import drafter_megabytes
from specviz.core.engine import Generation
from specviz.core.settings import Settings
from specviz.drafters import DRAFTERS, NEURAL_DRAFTERS, TREE_DRAFTERS
from specviz.kernels import native
from specviz.teaching.atlas import METHODS
from specviz.teaching.presets import PRESETS, Preset

TEMPERATURES = (0.0, 0.8)
BASELINE = "none"
LOSSY = tuple((m.drafter, m.verification) for m in METHODS if not m.lossless)  # (drafter, its lossy rule)
HF_DRAFTERS = ("none", "prompt-lookup")  # what transformers can do too: greedy and prompt lookup
HF_MAX_NEW_TOKENS = 128
FULL = {"max_new_tokens": 256, "repeats": 3}  # every preset
# --quick (CI's smoke test): one prompt of each of three kinds, few tokens, still 3 repeats
QUICK = {"prompts": ("Free verse", "Repetitive", "Quote a passage"), "max_new_tokens": 32, "repeats": 3}


@dataclass
class BenchRow:
    impl: str  # "specviz" or "transformers"
    suite: str  # "main" or "vs-transformers" (see the module docstring)
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
    memory_mb: float | None  # what the drafter adds to plain decoding after one round (specviz.bench.memory); None: theirs
    # Main-suite baseline rows: its second run in each repeat over its first (median), the A/A "speedup"
    # that noise alone gives (module docstring); None on every other row.
    aa_speedup: float | None = None
    # Main suite: "faster", "slower" or "tie" against the baseline, from a sign test over the paired runs
    # (module docstring; the baseline's row: its A/A pairs), and that test's two-sided p-value.
    verdict: str | None = None
    verdict_p: float | None = None
    cpu: str | None = None  # the machine's CPU (specviz.adaptive.costs.cpu_name): figures differ from one CPU to another
    # Adaptive-K rows: the cost curve adaptive K priced drafts with (CostCurve.summary); None on the others.
    costs: str | None = None


def rows_to_jsonl(rows: list[dict]) -> str:
    """One JSON object per line, keys in BenchRow order."""
    return "".join(json.dumps(r) + "\n" for r in rows)


# fields added later: older files lack them
OPTIONAL = {"k_auto": False, "load_average": None, "verification": "lossless", "tau_same_lossless": None,
            "tau_same_block": None, "tau_same_traversal": None, "memory_mb": None, "aa_speedup": None,
            "verdict": None, "verdict_p": None, "accept_cost": None, "cpu": None, "costs": None}  # fmt: skip


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


@dataclass
class _Run:
    """One generation's measurements."""

    tokens: list[int]
    seconds: float
    forwards: int
    drafted: int = 0
    tried: int = 0
    accepted: int = 0
    draft_s: float = 0.0
    verify_s: float = 0.0
    accept_s: float = 0.0
    expected: dict | None = None  # rule -> expected accepted tokens summed over the rounds (block runs)


def bench_settings(drafter: str, temperature: float, k: int, n: int, seed: int, auto: bool = False,
                   verification: str = "lossless") -> Settings:  # fmt: skip
    """How the benchmark runs a drafter: the given K (or adaptive K up to it), temperature, length,
    seed and verification rule, every knob at its default."""
    return Settings(drafter=drafter, k=k, k_auto=auto, temperature=temperature, max_new_tokens=n, seed=seed,
                    verification=verification)  # fmt: skip


def expected_totals(rounds) -> dict | None:
    """Rule -> expected accepted tokens summed over the rounds, when the verifier recorded them
    (block verification does, for its own drafts, under both rules); None otherwise."""
    notes = [r.verify_notes["expected_accepted"] for r in rounds if "expected_accepted" in r.verify_notes]
    if not notes:
        return None
    return {rule: sum(n[rule] for n in notes) for rule in notes[0]}


def _quiet_heap() -> None:
    """Before a timed run: collect the runs before it and freeze what is left (module docstring)."""
    gc.collect()
    gc.freeze()


def _specviz_run(target, tiny, prompt, config, temperature, n, seed, costs=REFERENCE) -> _Run:
    drafter, k, auto, verification = config
    settings = bench_settings(drafter, temperature, k, n, seed, auto, verification)
    _quiet_heap()
    t0 = time.perf_counter()
    trace = Generation(target, prompt, settings, tiny.model if tiny is not None else None, costs=costs).run()
    seconds = time.perf_counter() - t0
    s = trace.summary()
    return _Run(trace.tokens, seconds, s["target_forwards"], s["drafted"], s["tried"], s["accepted"],
                sum(r.draft_s for r in trace.rounds), sum(r.verify_s for r in trace.rounds),
                sum(r.accept_s for r in trace.rounds), expected_totals(trace.rounds))  # fmt: skip


def aa_speedup(first, second) -> float:
    """The baseline against itself: per repeat, its first run's seconds over its second's, summed
    over the prompts (lists over repeats of lists over prompts of _Run); median over repeats."""
    return statistics.median(sum(r.seconds for r in a) / sum(r.seconds for r in b)
                             for a, b in zip(first, second, strict=True))  # fmt: skip


VERDICT_P = 0.01  # a row is called faster or slower only below this two-sided p-value


def sign_test(wins: int, losses: int) -> float:
    """Two-sided sign test: how often a fair coin splits wins + losses trials at least this unevenly."""
    n, k = wins + losses, max(wins, losses)
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k, n + 1)) / 2**n)


def verdict(base, runs) -> tuple[str, float]:
    """Faster, slower or a tie against the baseline: each run paired with the baseline's on the same
    prompt in the same repeat (lists over repeats of lists over prompts of _Run). -> (verdict, p)"""
    pairs = [
        (b.seconds, r.seconds) for b_rep, rep in zip(base, runs, strict=True) for b, r in zip(b_rep, rep, strict=True)
    ]
    faster, slower = sum(r < b for b, r in pairs), sum(r > b for b, r in pairs)
    p = sign_test(faster, slower)
    return ("tie" if p >= VERDICT_P else "faster" if faster > slower else "slower"), p


def _one_round(target, tiny, prompt, drafter) -> Generation:
    gen = Generation(target, prompt, bench_settings(drafter, 0.8, 4, 8, 0), tiny.model if tiny is not None else None)
    gen.step()
    return gen


def _hf_run(hf, prompt, drafter, k, n, calls) -> _Run:
    kwargs = {"prompt_lookup_num_tokens": k, "max_matching_ngram_size": 3} if drafter == "prompt-lookup" else {}
    ids = torch.tensor([prompt])
    before = calls[0]
    _quiet_heap()
    t0 = time.perf_counter()
    with torch.no_grad():
        out = hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, min_new_tokens=n,
                          do_sample=False, use_cache=True, **kwargs)  # fmt: skip
    seconds = time.perf_counter() - t0
    tokens = out[0, len(prompt) :].tolist()
    if len(tokens) != n:
        raise RuntimeError(f"transformers generated {len(tokens)} tokens, asked for {n}")
    return _Run(tokens, seconds, calls[0] - before)  # its first pass (the prefill) emits a token


def _total(reps, attr) -> float:
    """Median over repeats of a per-prompt measurement summed over the prompt set."""
    return statistics.median(sum(getattr(r, attr) for r in rep) for rep in reps)


def _rows(runs, impl, suite, baseline, version, memory=None, costs=REFERENCE, **common) -> list[dict]:
    """One row per (config, temperature) of ``impl``. runs[(impl, (drafter, k, auto), T)] is a list
    over repeats of lists over prompts of _Run; ``baseline`` is the (impl, config) speedups divide;
    ``memory``: drafter -> MB it holds; ``costs``: the curve the adaptive-K runs priced drafts with."""
    rows, load, cpu = [], round(os.getloadavg()[1], 2), cpu_name()
    for (i, (drafter, k, auto, verification), T), reps in runs.items():
        if i != impl:
            continue
        base = runs[(*baseline, T)]
        first, base_first = reps[0], base[0]  # counts are the same in every repeat: same seeds, same work
        tokens, forwards = sum(len(r.tokens) for r in first), sum(r.forwards for r in first)
        drafted, tried = sum(r.drafted for r in first), sum(r.tried for r in first)
        accepted = sum(r.accepted for r in first)
        secs = [sum(r.seconds for r in rep) for rep in reps]
        base_secs = [sum(r.seconds for r in rep) for rep in base]
        speedup = statistics.median(b / s for b, s in zip(base_secs, secs, strict=True))
        tpf = tokens / forwards
        timing = {"draft_s": None, "verify_s": None, "accept_s": None, "draft_cost": None, "verify_cost": None,
                  "accept_cost": None}  # fmt: skip
        if impl == "specviz":  # the engine's rounds time their phases; transformers' do not
            timing = {a: _total(reps, a) for a in ("draft_s", "verify_s", "accept_s")}
            base_forward = _total(base, "verify_s") / sum(r.forwards for r in base_first)
            timing["draft_cost"] = timing["draft_s"] / drafted / base_forward if drafted else 0.0
            timing["verify_cost"] = timing["verify_s"] / forwards / base_forward
            timing["accept_cost"] = timing["accept_s"] / forwards / base_forward
        same = all(r.tokens == b.tokens for r, b in zip(first, base_first, strict=True)) if T == 0 else None
        tau_same = {"lossless": None, "block": None, "traversal": None}
        if all(r.expected is not None for r in first):  # the rules its verifier scored each draft under
            tau_same |= {rule: 1 + sum(r.expected[rule] for r in first) / forwards for rule in first[0].expected}
        row = BenchRow(
            impl=impl, suite=suite, drafter=drafter, temperature=T, k=k, k_auto=auto, verification=verification,
            **common, tokens=tokens,
            target_forwards=forwards, tokens_per_forward=tpf, acceptance_rate=accepted / tried if tried else None,
            seconds=statistics.median(secs), tokens_per_s=statistics.median(tokens / s for s in secs),
            speedup=speedup, fraction_of_ideal=speedup / tpf if impl == "specviz" else None, **timing,
            same_as_baseline=same, tau_same_lossless=tau_same["lossless"], tau_same_block=tau_same["block"],
            tau_same_traversal=tau_same["traversal"],
            threads=torch.get_num_threads(), load_average=load, version=version,
            memory_mb=(memory or {}).get(drafter) if impl == "specviz" else None,
            cpu=cpu, costs=costs.summary() if auto else None,
        )  # fmt: skip
        rows.append(asdict(row))
    return rows


def run_bench(target: Checkpoint, tiny: Checkpoint | None, prompts: list[Preset] | None = None,
              drafters=DRAFTERS, temperatures=TEMPERATURES, k: int = 4, max_new_tokens: int = 256,
              repeats: int = 3, seed: int = 0, progress=None, transformers: bool = False,
              auto: bool = False, block: bool = False, traversal: bool = False, lossy: bool = False,
              costs: CostCurve = REFERENCE, memory: dict[str, float] | None = None) -> list[dict]:  # fmt: skip
    """Benchmark rows, one per (drafter, temperature) of the main suite at K = ``k``, with
    ``auto=True`` one more per drafter in its default configuration (adaptive K, at most
    AUTO_K_MAX), with ``block=True`` one more per chain drafter verified with block verification at
    each temperature above 0, with ``traversal=True`` one more per tree drafter verified with
    traversal verification at each temperature above 0, with ``lossy=True`` one more per lossy method of
    the atlas (LOSSY) whose drafter runs, at each temperature above 0, then, with ``transformers=True``
    (needs the package), the vs-transformers suite.

    ``tiny`` is the neural drafters' checkpoint (None: leave NEURAL_DRAFTERS out of ``drafters``).
    ``costs``: the cost curve adaptive K prices drafts with (this machine's: specviz.adaptive.costs.measure).
    ``progress(done, total)`` is called after every generation."""
    prompts = list(PRESETS if prompts is None else prompts)
    drafters = list(dict.fromkeys([BASELINE, *drafters]))  # the baseline always runs, first
    configs = [(d, k, False, "lossless") for d in drafters]
    configs += [(d, AUTO_K_MAX, True, "lossless") for d in drafters[1:] if auto]
    configs += [(d, k, False, "block") for d in drafters[1:] if block and d not in TREE_DRAFTERS]
    configs += [(d, k, False, "traversal") for d in drafters[1:] if traversal and d in TREE_DRAFTERS]
    configs += [(d, k, False, rule) for d, rule in LOSSY if lossy and d in drafters]

    def runs_at(T: float) -> list[tuple]:  # block or traversal at temperature 0 is token-wise's greedy match;
        # a lossy rule's rows are for what it does to sampling
        return [c for c in configs if T > 0 or c[3] == "lossless"]

    Settings(k=k, max_new_tokens=max_new_tokens).check()
    if not prompts or repeats < 1 or not temperatures:
        raise ValueError("the benchmark needs at least one prompt, one temperature and one repeat")
    if set(NEURAL_DRAFTERS) & set(drafters) and tiny is None:
        raise ValueError("the neural drafters need the tiny checkpoint")
    ids = [target.tokenizer.encode(p.text) for p in prompts]
    hf = _load_hf(target) if transformers else None
    B = target.config.block_size
    n_hf = min(max_new_tokens, HF_MAX_NEW_TOKENS, B // 2)
    # transformers' prompt lookup may verify up to k positions past the last one it keeps
    hf_ids = [p[-(B - n_hf - k) :] for p in ids]
    aa = repeats * len(temperatures) * len(prompts)  # the baseline's second runs
    total = repeats * (sum(len(runs_at(T)) for T in temperatures) * len(prompts) + (4 * len(prompts) if hf else 0)) + aa
    done = 0

    def tick():
        nonlocal done
        done += 1
        if progress:
            progress(done, total)

    base = (BASELINE, k, False, "lossless")
    main, versus, again = {}, {}, {}
    order = random.Random(seed)  # the order of the runs on one prompt: shuffled, the same for the same seed
    try:  # every timed run freezes the heap before it (_quiet_heap); the caller gets it back as it was
        for _ in range(repeats):
            for T in temperatures:
                per_config, second = {c: [] for c in runs_at(T)}, []
                for j, prompt in enumerate(ids):
                    # Every configuration and the baseline's second (A/A) run, in a shuffled order: a run
                    # late in the block can measure slower than an early one (with the A/A run always last,
                    # it read 0.967x at T = 0 in one full bench, 2026-11-24), and a fixed order would charge
                    # that to the drafters (never-drafting ones came out "slower" by the sign test).
                    block = [(c, per_config[c]) for c in per_config] + [(base, second)]
                    for c, out in order.sample(block, len(block)):
                        out.append(_specviz_run(target, tiny, prompt, c, T, max_new_tokens, seed + j, costs))
                        tick()
                for c in per_config:
                    main.setdefault(("specviz", c, T), []).append(per_config[c])
                again.setdefault(T, []).append(second)
            if hf:
                model, calls = hf
                per = {(i, d): [] for i in ("specviz", "transformers") for d in HF_DRAFTERS}
                for prompt in hf_ids:
                    for d in HF_DRAFTERS:
                        config = (d, k, False, "lossless")
                        per[("specviz", d)].append(_specviz_run(target, None, prompt, config, 0.0, n_hf, seed))
                        tick()
                        per[("transformers", d)].append(_hf_run(model, prompt, d, k, n_hf, calls))
                        tick()
                for (i, d), runs in per.items():
                    versus.setdefault((i, (d, k, False, "lossless"), 0.0), []).append(runs)
    finally:
        gc.unfreeze()

    ours = f"specviz (torch {torch.__version__}; {native.backend()})"
    common = {"prompts": len(prompts), "repeats": repeats}
    # What each drafter holds, after one round on the first prompt (outside the timed runs).
    if memory is None:
        memory = {d: drafter_megabytes(_one_round(target, tiny, ids[0], d)) for d in drafters}
    rows = _rows(main, "specviz", "main", ("specviz", base), ours, memory, costs, new_tokens=max_new_tokens, **common)
    for row in rows:
        T = row["temperature"]
        first = main[("specviz", base, T)]
        runs = main[("specviz", (row["drafter"], row["k"], row["k_auto"], row["verification"]), T)]
        if row["drafter"] == BASELINE:
            row["aa_speedup"] = aa_speedup(first, again[T])
            runs = again[T]  # the A/A pairs
        row["verdict"], row["verdict_p"] = verdict(first, runs)
    if hf:
        import transformers as tf

        theirs = f"transformers {tf.__version__} (torch {torch.__version__})"
        for impl, version in (("specviz", ours), ("transformers", theirs)):
            rows += _rows(versus, impl, "vs-transformers", ("specviz", base), version, new_tokens=n_hf, **common)
    return rows


def _load_hf(target: Checkpoint):
    """The target as a transformers model, and a one-element list counting its forward passes."""
    os.environ["HF_HUB_OFFLINE"] = "1"  # nothing may be downloaded (nothing needs to be: see hf_model)
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    import transformers

    from specviz.training.export_hf import hf_model

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    model = hf_model(target)
    calls = [0]
    model.register_forward_pre_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    return model, calls


def transformers_available() -> bool:
    try:
        import transformers  # noqa: F401
    except ImportError:
        return False
    return True


NOTES_NO_HF = """\
K: the draft depth; auto≤12: adaptive K (each drafter's default configuration), at most 12.
tok/fwd: tokens per target forward pass, the speedup if drafting and verifying K+1 tokens cost
nothing. speedup: over the KV-cached baseline (drafter none) in the same run, median of interleaved
repeats. of ideal: speedup / tok/fwd. draft c: time to draft one token, verify v: time of one
verification pass, book: the bookkeeping of one round (accept, trim, record), all three relative
to one baseline forward pass. same: greedy output identical to the
baseline's. verify: the verification rule. τ tok, τ block: block rows only, on the run's own
drafts, 1 + the mean expected accepted tokens per round under token-wise and block verification.
τ trav: traversal rows (tree drafters), the same under traversal verification (and τ tok beside it).
A/A: baseline rows, the baseline timed again in each repeat, its speedup over the first run
(median): a speedup no further from 1.00 than that is noise. vs base: faster, slower or tie, by a
sign test (p < 0.01) over the runs paired with the baseline's (same repeat and prompt); the
baseline's row: its A/A pairs."""

NOTES = (
    NOTES_NO_HF
    + """
vs-transformers: a GPT-2 with 256 positions cannot slide its context window, so in this suite both
implementations generate n tokens after each prompt cut to its last 256 - n - K tokens (all in one
window); its speedups are over our baseline in the same suite."""
)

COLUMNS = (  # (header, key, format) of the readable table
    ("suite", "suite", "{}"),
    ("impl", "impl", "{}"),
    ("drafter", "drafter", "{}"),
    ("verify", "verification", "{}"),
    ("K", "k", "{}"),
    ("T", "temperature", "{:g}"),
    ("tok/fwd", "tokens_per_forward", "{:.2f}"),
    ("accept", "acceptance_rate", "{:.0%}"),
    ("tok/s", "tokens_per_s", "{:.0f}"),
    ("speedup", "speedup", "{:.2f}x"),
    ("A/A", "aa_speedup", "{:.3f}x"),
    ("vs base", "verdict", "{}"),
    ("of ideal", "fraction_of_ideal", "{:.0%}"),
    ("draft c", "draft_cost", "{:.3f}"),
    ("verify v", "verify_cost", "{:.2f}"),
    ("book", "accept_cost", "{:.3f}"),
    ("same", "same_as_baseline", "{}"),
    ("τ tok", "tau_same_lossless", "{:.2f}"),
    ("τ block", "tau_same_block", "{:.2f}"),
    ("τ trav", "tau_same_traversal", "{:.2f}"),
    ("MB", "memory_mb", "{:.1f}"),
)
LEFT = 4  # the first columns (names) are left-aligned, the numbers right-aligned


def format_table(rows: list[dict], markdown: bool = False) -> str:
    """The rows as an aligned text table (or a Markdown one). Missing values print as '-'."""
    cells = [[h for h, _, _ in COLUMNS]]
    for r in rows:
        r = OPTIONAL | r | {"k": f"auto≤{r['k']}" if r.get("k_auto") else r["k"]}
        cells.append(["-" if r[key] is None else fmt.format(r[key]) for _, key, fmt in COLUMNS])
    if markdown:
        lines = ["| " + " | ".join(row) + " |" for row in cells]
        lines.insert(1, "|" + "|".join("---" if i < LEFT else "---:" for i in range(len(COLUMNS))) + "|")
        return "\n".join(lines) + "\n"
    widths = [max(len(row[i]) for row in cells) for i in range(len(COLUMNS))]
    lines = []
    for row in cells:
        padded = [c.rjust(w) if i >= LEFT else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        lines.append("  ".join(padded).rstrip() + "\n")
    return "".join(lines)
