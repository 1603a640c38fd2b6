"""``python -m specviz``: headless runs, exactness checks, benchmarks and the artifacts' builds.

Every failure the user can cause ends with exit status 2 and one line on stderr (at most
MAX_ERROR characters, long values cut), never a traceback: argument errors, bad prompts,
unwritable outputs and unreadable checkpoints alike. Every argument, output path and checkpoint
header is checked before a model is loaded or a run starts. A run's flags come from the settings'
declarations (flags.py); each subcommand's code is in run.py, measure.py or training.py.
"""

import sys

from models.checkpoint import CheckpointError
from models.distilled import DistilledError
from models.eagle import EagleError
from models.medusa import MedusaError
from models.mtp import MTPError
from specviz.adaptive.sequoia import SHAPES
from specviz.cli.errors import CLIError, OneLineParser, one_line
from specviz.cli.flags import COSTS_HELP, add_run_args
from specviz.cli.measure import cmd_bench, cmd_bench_chart
from specviz.cli.run import cmd_exactness, cmd_generate, cmd_info, cmd_replay
from specviz.cli.training import (
    cmd_distill,
    cmd_eagle_depth,
    cmd_export_hf,
    cmd_model_card,
    cmd_train_dflash,
    cmd_train_eagle,
    cmd_train_medusa,
    cmd_train_mtp,
)
from specviz.llm.load import DTYPES
from specviz.teaching.exactness import MAX_SAMPLES
from specviz.training import distill, train_dflash, train_eagle, train_medusa, train_mtp
from specviz.verifiers import alternatives


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
    ex.add_argument("--first", type=int, choices=(1, 2, 3), default=3,
                    help="first tokens enumerated exactly (the character model; a real model enumerates all K + 1)")  # fmt: skip
    ex.add_argument("--min-mass", type=float, default=None,
                    help="a real model: the least probability of a sequence kept as its own cell in the pruned "
                    "enumeration (default 5 / samples); the pruned mass is one rest cell")  # fmt: skip
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
    for rule, shape in alternatives().items():  # --no-block, --no-traversal: from the registry
        b.add_argument(f"--no-{rule}", action="store_true", help=f"skip the {rule}-verification rows ({shape}, T > 0)")
    for shape in SHAPES[1:]:  # --no-sequoia: from the tree_shape knob's choices
        b.add_argument(f"--no-{shape}", action="store_true",
                       help=f"skip the rows of the tree drafters with the {shape} tree shape (T = 0 and 0.8)")  # fmt: skip
    b.add_argument("--no-lossy", action="store_true",
                   help="skip the lossy methods' rows (NASD's own rule, Medusa's typical acceptance; T > 0)")  # fmt: skip
    b.add_argument("--drafters", default=None,
                   help="comma-separated drafters to run (the baseline always runs); default: every registered one, "
                   "with --batch the drafters marked for load (Drafter.under_load)")  # fmt: skip
    b.add_argument("--out", help="also write the rows to this JSON-lines file")
    b.add_argument("--batch", help="batch sizes, e.g. 1,2,4,8,16,32,64: time plain decoding and a few drafters "
                   "decoding that many sequences together, instead of the main suite (specviz/bench/batch.py)")  # fmt: skip
    b.add_argument("--costs", choices=("measured", "reference"), default="measured", help=COSTS_HELP)
    b.add_argument("--model", default=None, help="a real model (smollm2, a local transformers folder, a cached hub "
                   "name): its own suite against transformers' generate instead (specviz/bench/llm.py); with --batch, the "
                   "batch bench on it (fixed K)")  # fmt: skip
    b.add_argument("--draft-model", default=None, help="with --model: a draft model sharing its tokenizer, for the "
                   "neural drafters and transformers' assisted generation")  # fmt: skip
    b.add_argument("--dtype", choices=tuple(DTYPES), default="float32", help="with --model: the real model's dtype")
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
    mtp = sub.add_parser("train-mtp", help="train the MTP modules of the mtp drafter on the frozen target")
    train_mtp.add_args(mtp)
    mtp.set_defaults(func=cmd_train_mtp)
    dflash = sub.add_parser(
        "train-dflash", help="train the parallel (DFlash) draft head on the frozen target's features"
    )
    train_dflash.add_args(dflash)
    dflash.set_defaults(func=cmd_train_dflash)
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
    except (
        CLIError,
        CheckpointError,
        DistilledError,
        EagleError,
        MedusaError,
        MTPError,
    ) as e:  # a bad artifact: one line
        print(f"error: {one_line(e)}", file=sys.stderr)
        return 2
    except SystemExit as e:  # --help
        return e.code if isinstance(e.code, int) else 0
    return 0
