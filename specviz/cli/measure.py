"""The measuring commands: bench (and bench --batch) and bench-chart."""

import contextlib
import sys
from pathlib import Path

import torch
from tqdm import tqdm

from models.checkpoint import atomic_write, checkpoint_header, load_checkpoint
from specviz.adaptive.sequoia import SHAPES
from specviz.cli.errors import CLIError, checked
from specviz.cli.flags import cost_curve
from specviz.core.outputs import writable_file
from specviz.core.settings import Settings
from specviz.drafters import drafter_class
from specviz.teaching.presets import PRESETS, preset
from specviz.verifiers import alternatives


@contextlib.contextmanager
def progress_bar(desc: str, unit: str):
    """A progress bar on stderr (none where it is not a terminal). -> progress(done, total)"""
    with tqdm(desc=desc, unit=unit, disable=None, file=sys.stderr) as bar:

        def progress(done, total):
            bar.total = total
            bar.update(done - bar.n)

        yield progress


def write_rows(args, rows: list[dict]) -> bool:
    """--out: the rows to that file; --json: to stdout. -> whether they went to stdout (nothing else to print)"""
    from specviz.bench.rows import rows_to_jsonl

    text = rows_to_jsonl(rows)
    if args.out:
        atomic_write(Path(args.out), lambda tmp: Path(tmp).write_text(text))
    if args.json:
        sys.stdout.write(text)
    return args.json


def bench_checks(args, max_new_tokens: int, repeats: int) -> list[str] | None:
    """Both benches' flags checked up front (CLIError: one line), and the checkpoints' headers.
    -> the drafters --drafters names (None: every one)"""
    if not 1 <= repeats <= 100:
        raise CLIError(f"--repeats must be between 1 and 100, got {repeats}")
    if args.threads is not None and not 1 <= args.threads <= 256:
        raise CLIError(f"--threads must be between 1 and 256, got {args.threads}")
    checked(Settings(k=args.k, max_new_tokens=max_new_tokens, seed=args.seed).check)
    drafters = None
    if args.drafters is not None:
        drafters = [d.strip() for d in args.drafters.split(",") if d.strip()]
        for d in drafters or [""]:
            checked(drafter_class, d)
    if args.out is not None:
        checked(writable_file, args.out)
    for name in ("target", "tiny"):
        checkpoint_header(name)
    return drafters


def cmd_bench(args) -> None:
    from specviz.bench import runner as bench
    from specviz.bench.peer import transformers_available
    from specviz.bench.report import NOTES, NOTES_NO_HF, format_table

    if args.batch is not None:
        return cmd_bench_batch(args)
    if args.model is not None:
        return cmd_bench_llm(args)
    quick = bench.QUICK if args.quick else bench.FULL
    prompts = [preset(name) for name in quick["prompts"]] if "prompts" in quick else list(PRESETS)
    max_new_tokens = quick["max_new_tokens"] if args.max_new_tokens is None else args.max_new_tokens
    repeats = quick["repeats"] if args.repeats is None else args.repeats
    drafters = bench_checks(args, max_new_tokens, repeats)
    hf = not args.no_transformers and transformers_available()
    if args.threads:
        torch.set_num_threads(args.threads)
    target, tiny = load_checkpoint("target"), load_checkpoint("tiny")
    costs = cost_curve(args.costs, target, not args.no_auto)  # with the threads the bench runs on
    with progress_bar("benchmark", "run") as progress:
        rows = bench.run_bench(target, tiny, prompts, drafters, k=args.k, max_new_tokens=max_new_tokens, repeats=repeats,
                               seed=args.seed, progress=progress, transformers=hf, auto=not args.no_auto,
                               rules=tuple(r for r in alternatives() if not getattr(args, f"no_{r}")), lossy=not args.no_lossy,
                               costs=costs, shapes=not all(getattr(args, f"no_{s}") for s in SHAPES[1:]))  # fmt: skip
    if write_rows(args, rows):
        return
    print(format_table(rows), end="")
    print(NOTES if hf else NOTES_NO_HF)
    if args.out:
        print(f"wrote {args.out}")


def cmd_bench_llm(args) -> None:
    """bench --model: the real-model suite (specviz/bench/llm.py), then the verify-cost curves v(N) of the model
    and of the character model. With --json the rows go to stdout and the rest to stderr."""
    from specviz.bench.llm import drafters_for, llm_table, run_llm_bench, verify_costs
    from specviz.bench.peer import transformers_available
    from specviz.cli.flags import load_llm
    from specviz.llm.load import DTYPES

    max_new_tokens = 32 if args.max_new_tokens is None else args.max_new_tokens
    repeats = 3 if args.repeats is None else args.repeats
    drafters = llm_checks(args, bench_checks(args, max_new_tokens, repeats))
    torch.set_num_threads(args.threads or 1)
    target, draft = load_llm(args.model, args.draft_model, DTYPES[args.dtype])
    with progress_bar("llm bench", "run") as progress:
        rows, extras = run_llm_bench(target, drafters=drafters or drafters_for(draft), k=args.k,
                                     max_new_tokens=max_new_tokens, repeats=repeats, seed=args.seed, draft_model=draft,
                                     transformers=not args.no_transformers and transformers_available(),
                                     progress=progress)  # fmt: skip
    char = load_checkpoint("target")
    table = llm_table(rows, extras, verify_costs(char.target_model(), char.config.vocab_size, repeats=25))
    if not write_rows(args, rows):
        print(table, end="")
    else:
        print(table, end="", file=sys.stderr)
    if args.out:
        print(f"wrote {args.out}", file=sys.stderr if args.json else sys.stdout)


def llm_checks(args, drafters: list[str] | None) -> list[str] | None:
    """bench --model's own checks (CLIError, one line): a real model, and drafters that run on its word pieces."""
    from specviz.llm.load import is_llm

    if not is_llm(args.model):
        raise CLIError(f"bench --model takes a real model (smollm2, a transformers folder, a cached hub name), got "
                       f"{args.model[:60]!r}; the character model's bench runs without --model")  # fmt: skip
    for d in drafters or []:
        if not drafter_class(d).bpe:
            raise CLIError(f"the {d} drafter runs on the character model only")
        if "draft_model" in drafter_class(d).needs and not args.draft_model:
            raise CLIError(f"the {d} drafter on a real model needs --draft-model")
    return drafters


def batch_sizes(text: str) -> tuple[int, ...]:
    """--batch: comma-separated batch sizes, each 1..256. CLIError otherwise."""
    try:
        sizes = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise CLIError(f"--batch takes batch sizes separated by commas, like 1,2,4,8; got {text!r}") from None
    if not sizes or not all(1 <= b <= 256 for b in sizes):
        raise CLIError(f"--batch sizes must be between 1 and 256, got {text!r}")
    return tuple(sorted(set(sizes)))


def cmd_bench_batch(args) -> None:
    """bench --batch: plain decoding and the batch bench's drafters at each batch size, then the roofline."""
    from specviz.adaptive.load import LoadCosts, kept_load
    from specviz.bench.batch import DRAFTERS, batch_table, mean_context, measure_load, run_batch_bench
    from specviz.bench.roofline import roofline, roofline_lines

    sizes = batch_sizes(args.batch)
    max_new_tokens = (64 if args.model is None else 32) if args.max_new_tokens is None else args.max_new_tokens
    repeats = 3 if args.repeats is None else args.repeats
    drafters = bench_checks(args, max_new_tokens, repeats)
    torch.set_num_threads(args.threads or 1)
    if args.model is not None:
        return cmd_bench_batch_llm(args, sizes, llm_checks(args, drafters), max_new_tokens, repeats)
    target, tiny = load_checkpoint("target"), load_checkpoint("tiny")
    roof, context = roofline(target.model), round(mean_context(target, max_new_tokens))
    load = None
    if not args.no_auto:  # adaptive K priced for each batch size: this machine's curves (the roofline's for reference)
        curve = cost_curve(args.costs, target, True)
        if args.costs == "reference":
            load = LoadCosts(curve, lambda rows, seqs: roof.seconds(rows, seqs, context))
        else:
            with progress_bar("measuring batched rounds", "batch size") as progress:
                load = LoadCosts(curve, kept_load(target, lambda: measure_load(target, progress=progress)))
    with progress_bar("batch bench", "batch") as progress:
        rows = run_batch_bench(target, tiny, sizes, drafters or DRAFTERS, k=args.k, max_new_tokens=max_new_tokens,
                               repeats=repeats, seed=args.seed, progress=progress, load=load)  # fmt: skip
    if write_rows(args, rows):
        return
    print(batch_table(rows), end="")
    print("\n".join(roofline_lines(roof, rows, context)))
    if args.out:
        print(f"wrote {args.out}")


def cmd_bench_batch_llm(args, sizes, drafters: list[str] | None, max_new_tokens: int, repeats: int) -> None:
    """bench --batch --model: the batch bench on a real model, its prompts (specviz/bench/llm.py), fixed K only
    (adaptive K's batched prices are measured on the character model: a real model's would take too long)."""
    from specviz.bench.batch import batch_table, llm_drafters, run_batch_bench
    from specviz.bench.llm import PROMPTS, _Draft
    from specviz.cli.flags import load_llm
    from specviz.llm.load import DTYPES

    target, draft = load_llm(args.model, args.draft_model, DTYPES[args.dtype])
    # One request a slot (waves=1): a real model's pass costs ~100x the character model's, and the character
    # bench's waves would triple the run. So the batch drains: a sequence that finishes early frees nothing.
    with progress_bar("batch bench", "batch") as progress:
        rows = run_batch_bench(target, _Draft(draft) if draft is not None else None, sizes,
                               drafters or llm_drafters(args.k), k=args.k, max_new_tokens=max_new_tokens,
                               repeats=repeats, seed=args.seed, progress=progress, texts=list(PROMPTS.values()),
                               model=args.model, waves=1)  # fmt: skip
    if write_rows(args, rows):
        return
    print(batch_table(rows), end="")
    print(f"{args.model}: fixed K = {args.k} (adaptive K under load is priced on the character model only)")
    if args.out:
        print(f"wrote {args.out}")


def cmd_bench_chart(args) -> None:
    from specviz.bench.chart import bench_chart
    from specviz.bench.rows import rows_from_jsonl

    png = checked(writable_file, args.png)
    try:
        text = Path(args.rows).read_text(encoding="utf-8")
    except OSError as e:
        raise CLIError(f"cannot read {args.rows}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise CLIError(f"{args.rows} is not UTF-8 text") from None
    try:
        rows = rows_from_jsonl(text)
    except ValueError as e:
        raise CLIError(f"{args.rows}: {e}") from None
    try:
        bench_chart(rows, png, args.title)
    except ValueError as e:
        raise CLIError(f"{args.rows}: {e}") from None
    except ImportError:
        raise CLIError("bench-chart needs matplotlib: pip install -r requirements-dev.txt") from None
    print(f"wrote {args.png}")
