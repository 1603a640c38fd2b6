"""``python -m specviz``: headless runs, exactness checks and benchmarks.

Every failure the user can cause ends with exit status 2 and one line on stderr (at most
MAX_ERROR characters, long values cut), never a traceback: argument errors, bad prompts,
unwritable outputs and unreadable checkpoints alike. Every argument, output path and checkpoint
header is checked before a model is loaded or a run starts.
"""

import argparse
import json
import shlex
import sys
from dataclasses import fields
from pathlib import Path

import torch
from tqdm import tqdm

from models.checkpoint import (
    CHECKPOINT_NAMES,
    CheckpointError,
    atomic_write,
    checkpoint_header,
    checkpoint_path,
    load_checkpoint,
)
from models.distilled import DistilledError
from models.eagle import EagleError
from models.medusa import MedusaError
from models.tokenizer import UnknownCharactersError
from specviz.adaptive.costs import REFERENCE, CostCurve, measure
from specviz.adaptive.policy import AUTO_K_MAX
from specviz.core.engine import Generation, Settings
from specviz.core.markup import cut
from specviz.core.outputs import writable_file, writable_folder
from specviz.drafters import DRAFTERS, EAGLE_DRAFTERS, NEURAL_DRAFTERS, eagle_head_name
from specviz.drafters.eagle import shared_head
from specviz.teaching.exactness import ALPHA, MAX_SAMPLES, run_exactness, verdict
from specviz.teaching.presets import PRESETS, preset
from specviz.training import distill, train_eagle, train_medusa
from specviz.training.model_card import render_card
from specviz.verifiers import SAMPLINGS, VARIANTS

MAX_ERROR = 300  # characters of an error line; a value that would make it longer is cut


class CLIError(Exception):
    """A user error: printed as one line, exit status 2."""


def one_line(message: str, limit: int = MAX_ERROR) -> str:
    """The message on one line, cut to ``limit`` characters."""
    text = " ".join(str(message).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def checked(check, *args):
    """``check(*args)``, its ValueError as a CLIError."""
    try:
        return check(*args)
    except ValueError as e:
        raise CLIError(str(e)) from None


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):
        raise CLIError(message)


def cmd_info(args) -> None:
    rows = []
    for name in CHECKPOINT_NAMES:
        ckpt = load_checkpoint(name)
        rows.append(
            {
                "name": name,
                "path": str(ckpt.path),
                "config": vars(ckpt.config),
                "parameters": ckpt.model.num_params(),
                "train_loss": ckpt.meta.get("train_loss"),
                "val_loss": ckpt.meta.get("val_loss"),
                "iterations": ckpt.meta.get("iterations"),
                "file_size_bytes": checkpoint_path(name).stat().st_size,
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    for r in rows:
        c = r["config"]
        print(
            f"{r['name']:<7} {r['parameters']:>9,} params  {c['n_layer']} layers x {c['n_embd']} wide, "
            f"{c['n_head']} heads, block_size {c['block_size']}, vocab {c['vocab_size']}  "
            f"train {r['train_loss']:.4f}  val {r['val_loss']:.4f}  {r['file_size_bytes'] / 1e6:.1f} MB"
        )


def k_arg(text: str) -> int | str:
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"K must be a whole number or auto, got {cut(text)}") from None


def add_run_args(p: argparse.ArgumentParser, samples: bool = False, json_flag: bool = True) -> None:
    """The settings of one speculative run, as flags (defaults from engine.Settings)."""
    d = Settings()
    p.add_argument("--prompt", default="ROMEO:\nBut soft, what light", help="text to continue")
    p.add_argument("--drafter", default=d.drafter, help=f"one of: {', '.join(DRAFTERS)}")
    p.add_argument(
        "--k", type=k_arg, default=d.k, help=f"draft length K (1..32), or auto: adaptive, at most {AUTO_K_MAX}"
    )
    p.add_argument("--temperature", type=float, default=d.temperature, help="0 = greedy")
    if not samples:
        p.add_argument("--max-new-tokens", type=int, default=d.max_new_tokens, help="1..4096")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--model", default="target", help="target checkpoint: target or tiny (or a path)")
    p.add_argument("--verification", default=d.verification, help=f"one of: {', '.join(VARIANTS)}")
    p.add_argument("--min-context-count", type=int, default=d.min_context_count, help="trigram fallback threshold")
    p.add_argument("--trie-n", type=int, default=d.trie_n)
    p.add_argument("--trie-prefix-len", type=int, default=d.trie_prefix_len, help="L_p")
    p.add_argument("--trie-num-draft", type=int, default=d.trie_num_draft)
    p.add_argument("--nasd-n", type=int, default=d.nasd_n)
    p.add_argument("--nasd-filler-top-k", type=int, default=d.nasd_filler_top_k)
    p.add_argument("--nasd-continue-if-unknown", action="store_true", help="fill unknown contexts instead of stopping")
    p.add_argument("--lookup-max-ngram", type=int, default=d.lookup_max_ngram)
    p.add_argument("--lookup-min-ngram", type=int, default=d.lookup_min_ngram)
    p.add_argument("--suffix-max-match", type=int, default=d.suffix_max_match, help="suffix: longest suffix matched")
    p.add_argument("--suffix-min-prob", type=float, default=d.suffix_min_prob, help="suffix: path probability to grow")
    p.add_argument("--suffix-max-nodes", type=int, default=d.suffix_max_nodes, help="suffix: node budget")
    p.add_argument("--layer-skip-layers", type=int, default=d.layer_skip_layers, help="layer-skip: layers that draft")
    p.add_argument(
        "--distilled-context", type=int, default=d.distilled_context, help="distilled: L, the longest context"
    )
    p.add_argument("--distilled-nodes", type=int, default=d.distilled_nodes, help="distilled-tree: node budget")
    p.add_argument(
        "--tree-sampling", default=d.tree_sampling, help=f"neural-tree at T > 0: one of {', '.join(SAMPLINGS)}"
    )
    p.add_argument(
        "--neural-tree-nodes", type=int, default=d.neural_tree_nodes, help="neural-tree: node budget (1..64)"
    )
    p.add_argument("--neural-tree-children", type=int, default=d.neural_tree_children,
                   help="neural-tree: the most children per node (1..8)")  # fmt: skip
    p.add_argument("--medusa-nodes", type=int, default=d.medusa_nodes, help="medusa: node budget (1..64)")
    p.add_argument("--medusa-top-k", type=int, default=d.medusa_top_k, help="medusa: candidates per head (1..8)")
    p.add_argument("--lookahead-window", type=int, default=d.lookahead_window, help="lookahead: W, window columns")
    p.add_argument("--lookahead-ngram", type=int, default=d.lookahead_ngram, help="lookahead: N, n-gram size")
    p.add_argument("--lookahead-candidates", type=int, default=d.lookahead_candidates,
                   help="lookahead: G, n-grams per first token")  # fmt: skip
    p.add_argument("--eagle-no-ttt", dest="eagle_ttt", action="store_false",
                   help="eagle3, eagle3-tree: the head trained without training-time test")  # fmt: skip
    p.add_argument("--eagle-tree-nodes", type=int, default=d.eagle_tree_nodes, help="eagle3-tree: node budget (1..64)")
    p.add_argument("--eagle-tree-children", type=int, default=d.eagle_tree_children,
                   help="eagle3-tree: the most children per node (1..8)")  # fmt: skip
    if json_flag:
        p.add_argument("--json", action="store_true", help="print one JSON object")


def prepare(args, max_new_tokens: int):
    """Checkpoints, prompt ids and settings from the flags; user errors become CLIError."""
    names = {f.name for f in fields(Settings)}
    values = {k: v for k, v in vars(args).items() if k in names}
    if values.get("k") == "auto":
        values |= {"k": AUTO_K_MAX, "k_auto": True}
    settings = Settings(
        **{**values, "max_new_tokens": max_new_tokens, "nasd_stop_if_unknown": not args.nasd_continue_if_unknown}
    )
    checked(settings.check)
    if not args.prompt:
        raise CLIError("the prompt is empty")
    config, tokenizer, _ = checkpoint_header(args.model)  # the header only: no weights yet
    try:
        prompt = tokenizer.encode(args.prompt)
    except UnknownCharactersError as e:
        raise CLIError(f"the prompt has {e}") from None
    if settings.drafter == "layer-skip" and settings.layer_skip_layers >= config.n_layer:
        raise CLIError(f"--layer-skip-layers must be below {args.model}'s {config.n_layer} layers")
    neural = settings.drafter in NEURAL_DRAFTERS
    if neural:
        tiny_config, tiny_tokenizer, _ = checkpoint_header("tiny")
        if tiny_tokenizer.pieces != tokenizer.pieces:
            raise CLIError(f"the {settings.drafter} drafter (tiny) has another vocabulary than {cut(args.model)}: "
                           "it cannot draft for it")  # fmt: skip
    target = load_checkpoint(args.model)
    if settings.drafter in EAGLE_DRAFTERS:
        try:
            shared_head(eagle_head_name(settings.drafter, settings), target)  # a head paired with this target
        except EagleError as e:
            raise CLIError(str(e)) from None
    draft_model = load_checkpoint("tiny").model if neural else None
    return target, prompt, settings, draft_model


COSTS_HELP = ("what adaptive K takes a verify pass to cost: measured on this machine first (~3 s), or the "
              "reference machine's figures (specviz/adaptive/costs.py)")  # fmt: skip


def cost_curve(choice: str, target, needed: bool) -> CostCurve:
    """The verify-cost curve for ``--costs``: measured here (with a bar) only when a run will use it."""
    if not needed or choice == "reference":
        return REFERENCE
    with tqdm(desc="measuring verify costs", unit="repeat", disable=None, leave=False, file=sys.stderr) as bar:

        def progress(done, total):
            bar.total = total
            bar.update(done - bar.n)

        return measure(target.model, progress=progress)


def cmd_generate(args) -> None:
    target, prompt, settings, draft_model = prepare(args, args.max_new_tokens)
    gen = Generation(target, prompt, settings, draft_model, costs=cost_curve(args.costs, target, settings.k_auto))
    with tqdm(total=settings.max_new_tokens, desc="generating", unit="tok", disable=None, leave=False) as bar:
        trace = gen.run(lambda n: bar.update(n - bar.n))
    summary = trace.summary()
    if args.json:
        out = trace.to_dict()
        print(
            json.dumps(
                {k: out[k] for k in ("text", "tokens", "target_forwards", "mean_accepted", "acceptance_rate")} | out
            )
        )
        return
    print(args.prompt + trace.text)
    depth = settings.k  # the drafter may cap adaptive K's
    if gen.adaptive is not None:
        depth = f"auto (at most {gen.adaptive.k_max}; verify costs: {gen.adaptive.curve.source})"
    print(
        f"-- {summary['tokens']} tokens in {summary['target_forwards']} target forward passes "
        f"({summary['mean_accepted']:.2f} per pass), acceptance rate {summary['acceptance_rate']:.1%}, "
        f"drafter {settings.drafter}, K={depth}, T={settings.temperature}",
        file=sys.stderr,
    )


def cmd_replay(args) -> None:
    from specviz.teaching.replay import replay_html

    out = checked(writable_file, args.out)  # before any work
    target, prompt, settings, draft_model = prepare(args, args.max_new_tokens)
    costs = cost_curve(args.costs, target, settings.k_auto)
    with tqdm(total=settings.max_new_tokens, desc="generating", unit="tok", disable=None, leave=False) as bar:
        trace = Generation(target, prompt, settings, draft_model, costs=costs).run(lambda n: bar.update(n - bar.n))
    with tqdm(desc="charts", unit="round", disable=None, leave=False) as bar:

        def progress(done, total):
            bar.total = total
            bar.update(done - bar.n)

        page = replay_html(trace, f"specviz replay: {settings.drafter}", progress)
    atomic_write(out, lambda tmp: Path(tmp).write_text(page, encoding="utf-8"))
    print(f"wrote {args.out} ({len(trace.rounds)} rounds, {len(page.encode()) / 1e6:.1f} MB): open it in a browser, "
          "no server or network needed")  # fmt: skip


def cmd_exactness(args) -> None:
    if not 1 <= args.samples <= MAX_SAMPLES:
        raise CLIError(f"--samples must be between 1 and {MAX_SAMPLES}, got {args.samples}")
    k = AUTO_K_MAX if args.k == "auto" else args.k
    target, prompt, settings, draft_model = prepare(args, max(1, k + 1))  # runs of K + 1 tokens
    B = target.config.block_size
    if len(prompt) + settings.k > B:  # before any sampling
        raise CLIError(f"the prompt and the {settings.k + 1} generated tokens must fit in one window of {B}: "
                       f"use at most {B - settings.k} characters of prompt")  # fmt: skip
    with tqdm(total=args.samples, desc="sampling", unit="run", disable=None) as bar:
        res = checked(lambda: run_exactness(target, prompt, settings, args.samples, draft_model, n_tokens=args.first,
                                            progress=lambda n: bar.update(n - bar.n)))  # fmt: skip
    kind, sentence = verdict(res, ALPHA)
    pieces = target.tokenizer.pieces
    e, o = res.expected.flatten(), res.observed.flatten()
    rows = [{"tokens": "".join(pieces[t] for t in torch.unravel_index(torch.tensor(i), res.expected.shape)),
             "expected": float(e[i]), "observed": int(o[i]) / res.samples}
            for i in e.argsort(descending=True)[:10].tolist()]  # fmt: skip
    test = lambda t: {"statistic": t.statistic, "dof": t.dof, "p_value": t.p_value}  # noqa: E731
    result = {"drafter": settings.drafter, "verification": settings.verification, "temperature": settings.temperature,
              "k": settings.k, "samples": res.samples, "new_tokens": res.new_tokens, "draft_positions": res.draft_depths,
              "verdict": kind, "sentence": sentence, "p_value": res.p_value, "impossible": res.impossible,
              "every_position": test(res.joint), "positions": [test(t) for t in res.positions],
              "first_tokens": res.expected.dim(), "first": test(res.first), "tv_distance": res.tv_distance,
              "top": rows}  # fmt: skip
    if args.json:
        print(json.dumps(result))
        return
    print(f"{settings.drafter} ({settings.verification}), T={settings.temperature}, K={settings.k}, {res.samples} runs "
          f"of {res.new_tokens} tokens")  # fmt: skip
    print(f"{kind}: {sentence}")
    for j, t in enumerate(res.positions, 1):
        print(f"  position {j}: " + ("too few runs alone (pooled)" if t.p_value is None
                                     else f"chi-square {t.statistic:.1f} on {t.dof} dof, p {t.p_value:.3g}"))  # fmt: skip
    f = res.first
    print(f"first {res.expected.dim()} tokens exactly: " + ("not enough samples" if f.p_value is None else
          f"chi-square {f.statistic:.1f} on {f.dof} dof, p {f.p_value:.3g}") + f", TV {res.tv_distance:.4f}")  # fmt: skip
    for r in rows:
        print(f"  {r['tokens']!r:8} expected {r['expected']:.4f}  observed {r['observed']:.4f}")


def cmd_model_card(args) -> None:
    out = checked(writable_file, args.out)
    text = render_card()
    atomic_write(out, lambda tmp: Path(tmp).write_text(text))
    print(f"wrote {args.out}")


def cmd_bench(args) -> None:
    from specviz.bench import runner as bench

    quick = bench.QUICK if args.quick else bench.FULL
    prompts = [preset(name) for name in quick["prompts"]] if "prompts" in quick else list(PRESETS)
    max_new_tokens = quick["max_new_tokens"] if args.max_new_tokens is None else args.max_new_tokens
    repeats = quick["repeats"] if args.repeats is None else args.repeats
    if not 1 <= repeats <= 100:
        raise CLIError(f"--repeats must be between 1 and 100, got {repeats}")
    if args.threads is not None and not 1 <= args.threads <= 256:
        raise CLIError(f"--threads must be between 1 and 256, got {args.threads}")
    checked(Settings(k=args.k, max_new_tokens=max_new_tokens, seed=args.seed).check)
    if args.out is not None:
        checked(writable_file, args.out)
    for name in ("target", "tiny"):
        checkpoint_header(name)
    hf = not args.no_transformers and bench.transformers_available()
    if args.threads:
        torch.set_num_threads(args.threads)
    target, tiny = load_checkpoint("target"), load_checkpoint("tiny")
    costs = cost_curve(args.costs, target, not args.no_auto)  # with the threads the bench runs on
    with tqdm(desc="benchmark", unit="run", disable=None, file=sys.stderr) as bar:

        def progress(done, total):
            bar.total = total
            bar.update(done - bar.n)

        rows = bench.run_bench(target, tiny, prompts, k=args.k, max_new_tokens=max_new_tokens, repeats=repeats,
                               seed=args.seed, progress=progress, transformers=hf, auto=not args.no_auto,
                               block=not args.no_block, traversal=not args.no_traversal, lossy=not args.no_lossy,
                               costs=costs)  # fmt: skip
    text = bench.rows_to_jsonl(rows)
    if args.out:
        atomic_write(Path(args.out), lambda tmp: Path(tmp).write_text(text))
    if args.json:
        sys.stdout.write(text)
        return
    print(bench.format_table(rows), end="")
    print(bench.NOTES if hf else bench.NOTES_NO_HF)
    if args.out:
        print(f"wrote {args.out}")


def cmd_bench_chart(args) -> None:
    from specviz.bench.chart import bench_chart
    from specviz.bench.runner import rows_from_jsonl

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


def cmd_export_hf(args) -> None:
    from specviz.training.export_hf import export_hf

    out = checked(writable_folder, args.dir)
    target = load_checkpoint(args.model)
    try:
        paths = export_hf(target, out)
    except (NotADirectoryError, FileExistsError, PermissionError) as e:
        raise CLIError(f"cannot write to {args.dir}: {e.strerror or e}") from None
    for p in paths:
        print(f"wrote {p}")


def cmd_distill(args) -> None:

    try:
        cfg = distill.config_from(args)
    except ValueError as e:
        raise CLIError(str(e)) from None
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    command = "python -m specviz " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    meta = distill.build(args.target, Path(args.data), Path(args.out), cfg, Path(args.resume_dir), command)
    print(f"wrote {args.out}: {meta['contexts']:,} contexts from {meta['train_chars']:,} characters "
          f"in {meta['build_seconds'] / 60:.1f} min")  # fmt: skip


def cmd_train_medusa(args) -> None:
    cfg = checked(train_medusa.config_from, args)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    command = "python -m specviz " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    meta = train_medusa.train(args, cfg, command)
    print(f"wrote {args.out}: {cfg.heads} heads in {meta['train_seconds'] / 60:.1f} min; val top-1 per head "
          f"{meta['val']['head_top1']} (the target's own next token: {meta['val']['target_top1']})")  # fmt: skip


def cmd_train_eagle(args) -> None:
    config, _, _ = checkpoint_header(args.target)
    checked(train_eagle.check_args, args, config.block_size)
    command = "python -m specviz " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    meta = train_eagle.train(args, command)
    acc = meta["val_depth_accuracy"]
    print(f"wrote {args.out} in {meta['train_seconds'] / 60:.1f} min; val greedy acceptance by depth 1..{len(acc['cumulative'])}: "
          f"{acc['cumulative']} (conditional {acc['conditional']}, {acc['windows']} windows)")  # fmt: skip


def cmd_eagle_depth(args) -> None:
    from specviz.training.eagle_depth import depth_acceptance, validation_prompts

    if not 1 <= args.prompts <= 100 or not 1 <= args.max_new_tokens <= 1024 or not 1 <= args.k <= 8:
        raise CLIError("--prompts must be 1..100, --max-new-tokens 1..1024 and --k 1..8")
    if not Path(args.data).is_file():
        raise CLIError(f"corpus not found: {args.data}")
    if args.out:
        checked(writable_file, args.out)
    torch.set_num_threads(1)
    target, tiny = load_checkpoint("target"), load_checkpoint("tiny")
    prompts = validation_prompts(target.tokenizer, Path(args.data), args.prompts)
    measured = {str(t): depth_acceptance(target, prompts, tiny.model, t, args.k, args.max_new_tokens, args.seed)
                for t in (0.0, 0.8)}  # fmt: skip
    result = {"conditions": f"{args.prompts} validation prompts of 96 characters, {args.max_new_tokens} new "
                            f"characters each, K = {args.k}, seed {args.seed}, lossless verification",
              "command": "python -m specviz " + " ".join(shlex.quote(a) for a in sys.argv[1:]), "measured": measured}  # fmt: skip
    text = json.dumps(result, indent=1)
    if args.out:
        atomic_write(Path(args.out), lambda tmp: Path(tmp).write_text(text + "\n"))
    print(text)


def build_parser() -> OneLineParser:
    parser = OneLineParser(prog="python -m specviz", description="specviz: speculative decoding, step by step")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    info = sub.add_parser("info", help="the shipped checkpoints: config, size, recorded losses")
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(func=cmd_info)
    gen = sub.add_parser("generate", help="run speculative decoding and print the text (or the trace)")
    add_run_args(gen)
    gen.add_argument("--costs", choices=("measured", "reference"), default="measured", help=COSTS_HELP)
    gen.set_defaults(func=cmd_generate)
    rep = sub.add_parser("replay", help="write a recorded run as one self-contained HTML file (no server, no network)")
    add_run_args(rep, json_flag=False)
    rep.add_argument("--out", required=True, help="the HTML file to write, e.g. run.html")
    rep.add_argument("--costs", choices=("measured", "reference"), default="measured", help=COSTS_HELP)
    rep.set_defaults(func=cmd_replay)
    ex = sub.add_parser("exactness", help="test N runs of K+1 tokens against the target's exact distribution, "
                        "at every position")  # fmt: skip
    add_run_args(ex, samples=True)
    ex.add_argument("--samples", type=int, default=2000, help=f"number of speculative runs (1..{MAX_SAMPLES})")
    ex.add_argument("--first", type=int, choices=(1, 2, 3), default=3, help="first tokens enumerated exactly")
    ex.set_defaults(func=cmd_exactness)
    card = sub.add_parser("model-card", help="regenerate models/README.md from the checkpoints")
    card.add_argument("--out", default="models/README.md")
    card.set_defaults(func=cmd_model_card)
    b = sub.add_parser("bench", help="every drafter against the baseline (and transformers), timed in one run")
    b.add_argument("--json", action="store_true", help="print one JSON object per row (JSON lines)")
    b.add_argument("--quick", action="store_true", help="3 prompts, 32 tokens each: CI's smoke test")
    b.add_argument("--k", type=int, default=4, help="draft length K (1..32)")
    b.add_argument("--repeats", type=int, default=None, help="interleaved repeats, median reported (default 3)")
    b.add_argument("--max-new-tokens", type=int, default=None, help="new tokens per prompt (default 256, quick 32)")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--threads", type=int, default=None, help="torch threads (default: 1, or SPECVIZ_THREADS)")
    b.add_argument("--no-transformers", action="store_true", help="skip the comparison with transformers")
    b.add_argument(
        "--no-auto", action="store_true", help="skip the adaptive-K rows (each drafter's default configuration)"
    )
    b.add_argument("--no-block", action="store_true", help="skip the block-verification rows (chain drafters, T > 0)")
    b.add_argument("--no-traversal", action="store_true",
                   help="skip the traversal-verification rows (tree drafters, T > 0)")  # fmt: skip
    b.add_argument("--no-lossy", action="store_true",
                   help="skip the lossy methods' rows (NASD with seed 004's rule, Medusa's typical acceptance; T > 0)")  # fmt: skip
    b.add_argument("--out", help="also write the rows to this JSON-lines file")
    b.add_argument("--costs", choices=("measured", "reference"), default="measured", help=COSTS_HELP)
    b.set_defaults(func=cmd_bench)
    chart = sub.add_parser("bench-chart", help="draw benchmark rows (JSON lines) as a PNG (needs matplotlib)")
    chart.add_argument("rows", help="a file written by bench --out or bench --json")
    chart.add_argument("png", help="the PNG to write")
    chart.add_argument("--title", default="", help="a line above the chart")
    chart.set_defaults(func=cmd_bench_chart)
    hf = sub.add_parser("export-hf", help="write the target as a transformers GPT2LMHeadModel directory")
    hf.add_argument("dir", help="output directory (created if missing): config.json and model.safetensors")
    hf.add_argument("--model", default="target", help="checkpoint: target or tiny (or a path)")
    hf.set_defaults(func=cmd_export_hf)
    dist = sub.add_parser("distill", help="distil the target into the n-gram table of the distilled drafters")
    distill.add_args(dist)
    dist.set_defaults(func=cmd_distill)
    med = sub.add_parser("train-medusa", help="train the Medusa heads of the medusa drafter on the frozen target")
    train_medusa.add_args(med)
    med.set_defaults(func=cmd_train_medusa)
    eagle = sub.add_parser("train-eagle", help="train an EAGLE draft head on the frozen target's features")
    train_eagle.add_args(eagle)
    eagle.set_defaults(func=cmd_train_eagle)
    depth = sub.add_parser(
        "eagle-depth", help="acceptance by draft depth: the EAGLE heads and the tiny draft, measured"
    )
    depth.add_argument("--data", default=str(distill.DEFAULT_CORPUS), help="the corpus (its validation split)")
    depth.add_argument("--prompts", type=int, default=8, help="validation prompts (1..100)")
    depth.add_argument("--max-new-tokens", type=int, default=64)
    depth.add_argument("--k", type=int, default=4)
    depth.add_argument("--seed", type=int, default=0)
    depth.add_argument("--out", help="also write the JSON here (models/eagle_depth.json feeds the model card)")
    depth.set_defaults(func=cmd_eagle_depth)
    return parser


def main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
        args.func(args)
    except (CLIError, CheckpointError, DistilledError, EagleError, MedusaError) as e:  # a bad artifact: one line
        print(f"error: {one_line(e)}", file=sys.stderr)
        return 2
    except SystemExit as e:  # --help
        return e.code if isinstance(e.code, int) else 0
    return 0
