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

With ``shapes=True`` every drafter with the trait ``shaped`` also runs with each fixed tree shape of
specviz/adaptive/sequoia.py (``--tree-shape sequoia``) at every temperature, in the same interleaved runs
against the same baseline; their rows' suite is the shape's name ("sequoia"), so that a reader of the
main suite (the atlas, the shoot-out, the chart) finds one row per drafter as before.

In each repeat the baseline also runs a second time on every prompt (an A/A test), and each main-suite
row carries a verdict against the baseline: specviz/bench/report.py. One timed run, on a quiet heap:
specviz/bench/timing.py; transformers' runs: specviz/bench/peer.py; the rows and their file format:
specviz/bench/rows.py.
"""

import datetime
import gc
import os
import random
import statistics
from dataclasses import asdict

import torch

from models.checkpoint import Checkpoint
from specviz.adaptive.costs import REFERENCE, CostCurve, cpu_name
from specviz.adaptive.policy import AUTO_K_MAX
from specviz.adaptive.sequoia import SHAPES
from specviz.bench.memory import drafter_megabytes
from specviz.bench.peer import HF_MAX_NEW_TOKENS, hf_run, load_hf, peer_drafters
from specviz.bench.report import aa_speedup, verdict
from specviz.bench.rows import BenchRow
from specviz.bench.timing import bench_settings, specviz_run
from specviz.core.engine import Generation
from specviz.core.settings import Settings
from specviz.drafters import BASELINE, drafter_class, drafter_names
from specviz.kernels import native
from specviz.teaching.atlas import methods
from specviz.teaching.presets import PRESETS, Preset
from specviz.verifiers import LOSSLESS, alternatives

TEMPERATURES = (0.0, 0.8)
DYNAMIC = SHAPES[0]  # the tree_shape knob's default: a row of the main suite


def lossy_methods() -> tuple[tuple[str, str], ...]:
    """(drafter, its lossy rule) for each lossy method of the atlas."""
    return tuple((m.drafter, m.verification) for m in methods() if not m.lossless)


FULL = {"max_new_tokens": 256, "repeats": 3}  # every preset
# --quick (CI's smoke test): one prompt of each of three kinds, few tokens, still 3 repeats
QUICK = {"prompts": ("Free verse", "Repetitive", "Quote a passage"), "max_new_tokens": 32, "repeats": 3}


def _one_round(target, tiny, prompt, drafter) -> Generation:
    gen = Generation(target, prompt, bench_settings(drafter, 0.8, 4, 8, 0), tiny.model if tiny is not None else None)
    gen.step()
    return gen


def _total(reps, attr) -> float:
    """Median over repeats of a per-prompt measurement summed over the prompt set."""
    return statistics.median(sum(getattr(r, attr) for r in rep) for rep in reps)


def _rows(runs, impl, suite, baseline, version, memory=None, costs=REFERENCE, **common) -> list[dict]:
    """One row per (config, temperature) of ``impl``. runs[(impl, (drafter, k, auto, verification, shape), T)]
    is a list over repeats of lists over prompts of timing.Run; ``baseline`` is the (impl, config) speedups divide;
    ``memory``: drafter -> MB it holds; ``costs``: the curve the adaptive-K runs priced drafts with."""
    rows, load, cpu = [], round(os.getloadavg()[1], 2), cpu_name()
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    for (i, (drafter, k, auto, verification, shape), T), reps in runs.items():
        if i != impl:
            continue
        base = runs[(*baseline, T)]
        first, base_first = reps[0], base[0]  # counts are the same in every repeat: same seeds, same work
        tokens, forwards = sum(len(r.tokens) for r in first), sum(r.forwards for r in first)
        drafted, tried = sum(r.drafted for r in first), sum(r.tried for r in first)
        accepted = sum(r.accepted for r in first)
        secs = [sum(r.seconds for r in rep) for rep in reps]
        base_secs = [sum(r.seconds for r in rep) for rep in base]
        ratios = [b / s for b, s in zip(base_secs, secs, strict=True)]
        speedup = statistics.median(ratios)
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
        tau_same = {f"tau_same_{rule}": None for rule in (LOSSLESS, *alternatives())}  # BenchRow's columns
        if all(r.expected is not None for r in first):  # the rules its verifier scored each draft under
            tau_same |= {f"tau_same_{rule}": 1 + sum(r.expected[rule] for r in first) / forwards
                         for rule in first[0].expected}  # fmt: skip
        row = BenchRow(
            impl=impl, suite=suite if shape == DYNAMIC else shape, drafter=drafter, temperature=T, k=k, k_auto=auto, verification=verification,
            **common, tokens=tokens,
            target_forwards=forwards, tokens_per_forward=tpf, acceptance_rate=accepted / tried if tried else None,
            seconds=statistics.median(secs), tokens_per_s=statistics.median(tokens / s for s in secs),
            speedup=speedup, fraction_of_ideal=speedup / tpf if impl == "specviz" else None, **timing,
            same_as_baseline=same, **tau_same,
            threads=torch.get_num_threads(), load_average=load, version=version,
            memory_mb=(memory or {}).get(drafter) if impl == "specviz" else None,
            cpu=cpu, costs=costs.summary() if auto else None, speedup_min=min(ratios), speedup_max=max(ratios),
            date=today,
        )  # fmt: skip
        rows.append(asdict(row))
    return rows


def run_bench(target: Checkpoint, tiny: Checkpoint | None, prompts: list[Preset] | None = None,
              drafters=None, temperatures=TEMPERATURES, k: int = 4, max_new_tokens: int = 256,
              repeats: int = 3, seed: int = 0, progress=None, transformers: bool = False,
              auto: bool = False, rules: tuple[str, ...] = (), lossy: bool = False,
              costs: CostCurve = REFERENCE, memory: dict[str, float] | None = None,
              shapes: bool = False) -> list[dict]:  # fmt: skip
    """Benchmark rows, one per (drafter, temperature) of the main suite at K = ``k``, with
    ``auto=True`` one more per drafter in its default configuration (adaptive K, at most
    AUTO_K_MAX), for each lossless alternative in ``rules`` (alternatives(): block verification on
    chains, traversal verification on trees) one more per drafter of its shape at each temperature
    above 0, with ``lossy=True`` one more per lossy method of the atlas (lossy_methods()) whose drafter runs, at each temperature above 0,
    with ``shapes=True`` one more per drafter with the trait ``shaped`` and fixed tree shape (SHAPES but the
    first) at each temperature, then, with ``transformers=True`` (needs the package), the vs-transformers suite.

    ``drafters``: the registered ones by default. ``tiny``: the tiny draft model's checkpoint (None: leave
    the drafters that need a draft model out of ``drafters``).
    ``costs``: the cost curve adaptive K prices drafts with (this machine's: specviz.adaptive.costs.measure).
    ``progress(done, total)`` is called after every generation."""
    prompts = list(PRESETS if prompts is None else prompts)
    drafters = list(dict.fromkeys([BASELINE, *(drafter_names() if drafters is None else drafters)]))  # baseline first
    configs = [(d, k, False, LOSSLESS, DYNAMIC) for d in drafters]
    configs += [(d, AUTO_K_MAX, True, LOSSLESS, DYNAMIC) for d in drafters[1:] if auto]
    for rule, shape in alternatives().items():
        trees = shape == "trees"
        configs += [
            (d, k, False, rule, DYNAMIC) for d in drafters[1:] if rule in rules and drafter_class(d).tree == trees
        ]
    configs += [(d, k, False, rule, DYNAMIC) for d, rule in lossy_methods() if lossy and d in drafters]
    configs += [
        (d, k, False, LOSSLESS, shape)
        for shape in SHAPES[1:]
        for d in drafters[1:]
        if shapes and drafter_class(d).shaped
    ]

    def runs_at(T: float) -> list[tuple]:  # block or traversal at temperature 0 is token-wise's greedy match;
        # a lossy rule's rows are for what it does to sampling
        return [c for c in configs if T > 0 or c[3] == LOSSLESS]

    Settings(k=k, max_new_tokens=max_new_tokens).check()
    if not prompts or repeats < 1 or not temperatures:
        raise ValueError("the benchmark needs at least one prompt, one temperature and one repeat")
    if any("draft_model" in drafter_class(d).needs for d in drafters) and tiny is None:
        raise ValueError("the neural drafters need the tiny checkpoint")
    ids = [target.tokenizer.encode(p.text) for p in prompts]
    hf = load_hf(target) if transformers else None
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

    base = (BASELINE, k, False, LOSSLESS, DYNAMIC)
    main, versus, again = {}, {}, {}
    for T in temperatures:  # a fixed shape's rates are measured once per process (seconds): before, not in, a timed run
        for d, ck, auto_k, rule, shape in configs:
            if shape != DYNAMIC:
                settings = bench_settings(d, T, ck, 1, seed, auto_k, rule, shape)
                Generation(target, ids[0], settings, tiny.model if tiny is not None else None)
    order = random.Random(seed)  # the order of the runs on one prompt: shuffled, the same for the same seed
    try:  # every timed run freezes the heap before it (timing.quiet_heap); the caller gets it back as it was
        for _ in range(repeats):
            for T in temperatures:
                per_config, second = {c: [] for c in runs_at(T)}, []
                for j, prompt in enumerate(ids):
                    # Every configuration and the baseline's second (A/A) run, in a shuffled order: a run
                    # late in the block can measure slower than an early one (docs/notes/bench.md), and a fixed
                    # order would charge that to the drafters (never-drafting ones came out "slower" by the sign
                    # test).
                    block = [(c, per_config[c]) for c in per_config] + [(base, second)]
                    for c, out in order.sample(block, len(block)):
                        out.append(specviz_run(target, tiny, prompt, c, T, max_new_tokens, seed + j, costs))
                        tick()
                for c in per_config:
                    main.setdefault(("specviz", c, T), []).append(per_config[c])
                again.setdefault(T, []).append(second)
            if hf:
                model, calls = hf
                per = {(i, d): [] for i in ("specviz", "transformers") for d in peer_drafters(k)}
                for prompt in hf_ids:
                    for d in peer_drafters(k):
                        config = (d, k, False, LOSSLESS, DYNAMIC)
                        per[("specviz", d)].append(specviz_run(target, None, prompt, config, 0.0, n_hf, seed))
                        tick()
                        per[("transformers", d)].append(hf_run(model, prompt, d, k, n_hf, calls))
                        tick()
                for (i, d), runs in per.items():
                    versus.setdefault((i, (d, k, False, LOSSLESS, DYNAMIC), 0.0), []).append(runs)
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
        shape = row["suite"] if row["suite"] in SHAPES else DYNAMIC
        runs = main[("specviz", (row["drafter"], row["k"], row["k_auto"], row["verification"], shape), T)]
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
