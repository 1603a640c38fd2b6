"""The flags of one speculative run, generated from the settings' declarations (Settings' knobs),
and the checks that turn them into a run before any weights load."""

import argparse
import sys

from tqdm import tqdm

from models.checkpoint import checkpoint_header, load_checkpoint
from models.tokenizer import UnknownCharactersError
from specviz.adaptive.costs import REFERENCE, CostCurve, kept_curve, measure
from specviz.adaptive.policy import AUTO_K_MAX
from specviz.cli.errors import CLIError, checked
from specviz.core.markup import cut
from specviz.core.settings import KNOBS, Knob, Settings
from specviz.drafters import check_tokens, drafter_class
from specviz.llm import load as llm
from specviz.llm.load import DTYPES, is_llm

DEFAULT_PROMPT = "ROMEO:\nBut soft, what light"


def k_arg(text: str) -> int | str:
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"K must be a whole number or auto, got {cut(text)}") from None


def flag_help(name: str, k: Knob) -> str:
    """A knob's help on the command line: its method, its sentence, its range or choices."""
    text = (f"{', '.join(k.method)}: " if k.method else "") + k.help
    if k.choices is not None:
        return f"{text} One of: {', '.join(k.choices())}."
    if k.lo is not None:
        text += f" ({k.lo}..{k.hi}{', or 0' if k.zero else ''})"
    if k.auto:
        text += f"; or auto: adaptive, at most {AUTO_K_MAX}"
    return text


def add_run_args(p: argparse.ArgumentParser, samples: bool = False, json_flag: bool = True) -> None:
    """The settings of one run, one flag per knob (defaults from Settings); ``samples``: the exactness
    lab's runs, whose length is K + 1."""
    default = Settings()
    p.add_argument("--prompt", default=DEFAULT_PROMPT, help="text to continue")
    for name, k in KNOBS.items():
        if k.flag == "-" or (samples and name == "max_new_tokens"):
            continue  # set through another flag (k_auto: --k auto), or by the command
        flag, value = k.flag or f"--{name.replace('_', '-')}", getattr(default, name)
        if isinstance(value, bool):  # a switch: its flag turns it off when it is on by default
            p.add_argument(flag, dest=name, action="store_false" if value else "store_true", help=flag_help(name, k))
        else:
            kind = k_arg if k.auto else type(value)
            p.add_argument(flag, dest=name, type=kind, default=value, help=flag_help(name, k))
    p.add_argument("--model", default="target", help="target: the character checkpoint target or tiny (or a "
                   ".safetensors path), or a real model: smollm2 (SmolLM2-135M-Instruct, shipped), a local transformers "
                   "folder, or a hub name in the local cache (no downloads). A real model's tokens are word pieces: "
                   "with one, read 'tokens' wherever this help says 'characters'")  # fmt: skip
    p.add_argument("--draft-model", default=None, help="a real model's draft model (a folder or hub name) for the "
                   "drafters that need one; it must share the target's tokenizer")  # fmt: skip
    p.add_argument("--dtype", choices=tuple(DTYPES), default="float32",
                   help="a real model's dtype (float64: greedy output equals plain decoding exactly)")  # fmt: skip
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where a real model runs")
    if json_flag:
        p.add_argument("--json", action="store_true", help="print one JSON object")


def run_settings(args, max_new_tokens: int) -> Settings:
    """The Settings the flags describe ("auto" sets its knob's switch), checked."""
    values = {name: getattr(args, name) for name in KNOBS if hasattr(args, name)}
    for name, k in KNOBS.items():
        if k.auto and values.get(name) == "auto":
            values |= {name: AUTO_K_MAX, k.auto: True}
    settings = Settings(**{**values, "max_new_tokens": max_new_tokens})
    checked(settings.check)
    return settings


def prepare(args, max_new_tokens: int):
    """Checkpoints, prompt ids and settings from the flags; user errors become CLIError. The drafter
    checks its settings against the target's header, and its artifacts, before a run starts."""
    settings = run_settings(args, max_new_tokens)
    if not args.prompt:
        raise CLIError("the prompt is empty")
    if is_llm(args.model):
        return prepare_llm(args, settings)
    config, tokenizer, _ = checkpoint_header(args.model)  # the header only: no weights yet
    try:
        prompt = tokenizer.encode(args.prompt)
    except UnknownCharactersError as e:
        raise CLIError(f"the prompt has {e}") from None
    drafter = drafter_class(settings.drafter)
    checked(drafter.check, settings, config)
    neural = "draft_model" in drafter.needs
    if neural:
        tiny_config, tiny_tokenizer, _ = checkpoint_header("tiny")
        if tiny_tokenizer.pieces != tokenizer.pieces:
            raise CLIError(f"the {settings.drafter} drafter (tiny) has another vocabulary than {cut(args.model)}: "
                           "it cannot draft for it")  # fmt: skip
    target = load_checkpoint(args.model)
    drafter.load(settings, target)  # its artifacts (a head, a table), checked against this target
    draft_model = load_checkpoint("tiny").model if neural else None
    return target, prompt, settings, draft_model


def prepare_llm(args, settings: Settings):
    """prepare for a real model (specviz/llm/load.py): the model's files, its draft model's and their
    tokenizers checked, then the weights loaded. LLMError and the drafter's refusals become CLIError."""
    drafter = drafter_class(settings.drafter)
    dtype = DTYPES[args.dtype]

    def checks(src) -> None:
        checked(check_tokens, drafter, llm.LLMCheckpoint)
        checked(drafter.check, settings, src.config)
        if "draft_model" in drafter.needs and not args.draft_model:
            raise CLIError(f"the {settings.drafter} drafter on a real model needs --draft-model")

    wanted = args.draft_model if "draft_model" in drafter.needs else None
    target, draft_model = load_llm(args.model, wanted, dtype, args.device, checks)
    prompt = target.tokenizer.encode(args.prompt)
    if not prompt:
        raise CLIError("the prompt encodes to no tokens")
    checked(drafter.load, settings, target)  # a token n-gram table: counted here (or read from .cache/)
    return target, prompt, settings, draft_model


def load_llm(model: str, draft_model: str | None, dtype, device: str = "cpu", checks=None):
    """A real model and its draft model (None: none): their files and tokenizers checked (the draft must share
    the target's tokenizer), ``checks(source)`` run, then the weights loaded. LLMError becomes CLIError.
    -> (LLMCheckpoint, the draft's transformers model or None)"""
    try:
        src = llm.inspect(model, dtype)
        tokenizer = llm.load_tokenizer(src)
        if checks:
            checks(src)
        draft = None
        if draft_model:
            draft = llm.inspect(draft_model, dtype)
            draft_tokenizer = llm.load_tokenizer(draft)
            if not draft_tokenizer.same_as(tokenizer):
                raise CLIError(f"the draft model {cut(draft_model)} has another tokenizer than {cut(model)}: "
                               "it cannot draft for it")  # fmt: skip
        llm.device_of(device)
        target = llm.load(src, dtype, device, tokenizer)
        return target, llm.load(draft, dtype, device, draft_tokenizer).model if draft else None
    except llm.LLMError as e:
        raise CLIError(str(e)) from None


COSTS_HELP = ("what adaptive K takes a verify pass to cost: this machine's (measured once per CPU, ~3 s, and "
              "kept in .cache/costs), or the reference machine's figures (specviz/adaptive/costs.py)")  # fmt: skip


def cost_curve(choice: str, target, needed: bool) -> CostCurve:
    """The verify-cost curve for ``--costs``: this machine's only when a run will use it, from the disk
    cache the app shares, or measured here (with a bar) and kept there."""
    if not needed or choice == "reference" or target.bpe:  # measured on the character model only, so far
        return REFERENCE

    def measure_now() -> CostCurve:
        with tqdm(desc="measuring verify costs", unit="repeat", disable=None, leave=False, file=sys.stderr) as bar:

            def progress(done, total):
                bar.total = total
                bar.update(done - bar.n)

            return measure(target.model, progress=progress)

    return kept_curve(target, measure_now)
