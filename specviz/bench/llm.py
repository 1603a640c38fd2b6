"""The bench's real-model suite, ``suite = "llm"``: on one real model (SmolLM2 by default), its prompts and
settings, our decoding against transformers' ``generate`` on the same weights, greedy (temperature 0):

    our plain decoding        against  generate()
    our prompt lookup         against  generate(prompt_lookup_num_tokens=K)   (Drafter.peer)
    our draft-model chain     against  generate(assistant_model=..., K tokens a round), with --draft-model
    our other drafters        (suffix, n-grams, layer-skip: no transformers counterpart)

Runs are interleaved as the main suite's are: per repeat, per prompt, every (implementation, drafter) once, in a
seeded shuffled order. One row per (implementation, drafter) per prompt (``prompt`` names it), and one over the
whole set (``prompt`` None): tau (tokens per target pass), tokens/s, and the speedup over our plain decoding in the
same repeat. The first token where transformers' greedy output departs from ours, and the target's logit margin
there, come with the rows (``departures``); so does the real model's verify-cost curve v(N), beside the
character model's (``verify_costs``), since that curve is what makes speculation pay on a real model.
"""

import random
import statistics
import time

import torch

from specviz.bench.peer import hf_run
from specviz.bench.runner import DYNAMIC, _rows
from specviz.bench.timing import specviz_run
from specviz.drafters import BASELINE, drafter_class, drafter_names
from specviz.kernels import native
from specviz.verifiers import LOSSLESS

PROMPTS = {  # name -> text; "repeat" and "quote" repeat or quote their own text (prompt lookup's case)
    "repeat": (
        "The quick brown fox jumps over the lazy dog, and the dog sleeps on under the old oak tree by the river.\n"
    )
    * 2
    + "The quick brown fox",
    "quote": "Repeat the poem exactly.\nPoem: To be, or not to be, that is the question:\nWhether 'tis nobler in the "
    "mind to suffer\nThe slings and arrows of outrageous fortune,\nOr to take arms against a sea of troubles\n"
    "Repeat: To be, or not to be, that is the question:\n",
    "code": "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n\ndef fib_memo(n, memo={}):\n",
    "list": "A list of fruits:\n1. apple\n2. banana\n3. cherry\n4.",
}
SIZES = (1, 2, 5, 9, 17)  # rows of one verify pass, for v(N)


class _Draft:
    """A draft model as the bench's runs take it (the ``tiny`` slot): something with ``.model``."""

    def __init__(self, model):
        self.model = model


def drafters_for(draft_model) -> list[str]:
    """The drafters that run on word pieces (Drafter.bpe), the baseline first; those that need a draft model only
    when one is given."""
    names = [
        d for d in drafter_names(bpe=True) if draft_model is not None or "draft_model" not in drafter_class(d).needs
    ]
    return list(dict.fromkeys([BASELINE, *names]))


def peer_kwargs(drafter: str, k: int, draft_model) -> dict | None:
    """transformers' generate() arguments for the same method: Drafter.peer, or, for a chain drafted by the draft
    model, assisted generation with K tokens a round (a constant schedule, as ours). None: no counterpart."""
    cls = drafter_class(drafter)
    kw = cls.peer(k)
    if kw is None and draft_model is not None and "draft_model" in cls.needs and not cls.tree:
        kw = {"assistant_model": draft_model, "num_assistant_tokens": k, "num_assistant_tokens_schedule": "constant"}
    return kw


def verify_costs(target, vocab_size: int, context_len: int = 64, repeats: int = 5, sizes=SIZES) -> dict:
    """One pass over N new rows after ``context_len`` cached entries, for any TargetModel: the median time (ms)
    and v(N), the median over repeats of its time over the mean of the one-token passes either side of it
    (the machine's speed drifts; the ratio much less)."""
    context = [(7 * i + 3) % vocab_size for i in range(context_len + max(sizes) + 1)]
    P = context_len
    target.sync(context[: P + 1])  # the cache holds context[:P]

    def once(n: int) -> float:
        t0 = time.perf_counter()
        target.forward(context[P : P + n], list(range(P, P + n)))
        return time.perf_counter() - t0

    with torch.inference_mode():
        for n in sizes:  # warm every shape once
            once(n)
        ms, ratios = {n: [] for n in sizes}, {n: [] for n in sizes}
        for _ in range(repeats):
            for n in sizes:
                before, t, after = once(1), once(n), once(1)
                ms[n].append(t * 1000)
                ratios[n].append(2 * t / (before + after))
    return {n: {"ms": statistics.median(ms[n]), "v": statistics.median(ratios[n])} for n in sizes}


def departure(ck, prompt: list[int], ours: list[int], theirs: list[int]) -> dict | None:
    """Where transformers' greedy tokens first differ from ours, and the target's logit margin there (our token's
    logit minus theirs, after our tokens before it; small: a near-tie that rounding flipped). None: equal."""
    i = next((j for j, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b), None)
    if i is None:
        return None
    logits = ck.target_model().next_logits(prompt + ours[:i]).double()
    return {"index": i, "ours": ours[i], "theirs": theirs[i], "margin": float(logits[ours[i]] - logits[theirs[i]])}


def run_llm_bench(ck, prompts: dict[str, str] | None = None, drafters: list[str] | None = None, k: int = 4,
                  max_new_tokens: int = 32, repeats: int = 3, seed: int = 0, draft_model=None,
                  transformers: bool = True, progress=None) -> tuple[list[dict], dict]:  # fmt: skip
    """The llm suite on ``ck`` (an LLMCheckpoint): rows (BenchRow dicts, suite "llm"), and the extras:
    {"departures": prompt -> departure or None, "verify_costs": N -> {"ms", "v"}}. ``draft_model``: a
    transformers model sharing ck's tokenizer (--draft-model), for our neural drafters and assisted generation."""
    prompts = dict(PROMPTS if prompts is None else prompts)
    drafters = drafters_for(draft_model) if drafters is None else list(dict.fromkeys([BASELINE, *drafters]))
    if not prompts or repeats < 1:
        raise ValueError("the benchmark needs at least one prompt and one repeat")
    ids = {name: ck.tokenizer.encode(text) for name, text in prompts.items()}
    calls = [0]
    hook = ck.model.register_forward_pre_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    draft = _Draft(draft_model) if draft_model is not None else None
    jobs = [("specviz", d) for d in drafters]
    jobs += [("transformers", d) for d in drafters if transformers and peer_kwargs(d, k, draft_model) is not None]
    runs = {(name, impl, d): [] for name in ids for impl, d in jobs}  # -> a list over repeats of Run
    order, done, total = random.Random(seed), 0, repeats * len(ids) * len(jobs)
    try:
        for _ in range(repeats):
            for j, (name, prompt) in enumerate(ids.items()):
                for impl, d in order.sample(jobs, len(jobs)):
                    if impl == "specviz":
                        config = (d, k, False, LOSSLESS, DYNAMIC)
                        run = specviz_run(ck, draft, prompt, config, 0.0, max_new_tokens, seed + j)
                    else:
                        run = hf_run(ck.model, prompt, d, k, max_new_tokens, calls, peer_kwargs(d, k, draft_model))
                    runs[(name, impl, d)].append(run)
                    done += 1
                    if progress:
                        progress(done, total)
    finally:
        hook.remove()
    rows = []
    for scope in [*ids, None]:  # each prompt, then the whole set
        names = list(ids) if scope is None else [scope]
        table = {(impl, (d, k, False, LOSSLESS, DYNAMIC), 0.0): [[runs[(n, impl, d)][r] for n in names] for r in range(repeats)]
                 for impl, d in jobs}  # fmt: skip
        for impl in dict.fromkeys(impl for impl, _ in jobs):
            version = _version(impl)
            for row in _rows(table, impl, "llm", ("specviz", (BASELINE, k, False, LOSSLESS, DYNAMIC)), version,
                             prompts=len(names), repeats=repeats, new_tokens=max_new_tokens):  # fmt: skip
                rows.append(row | {"prompt": scope, "model": ck.name})
    extras = {"departures": {}, "verify_costs": verify_costs(ck.target_model(), ck.config.vocab_size)}
    if transformers:
        for name, prompt in ids.items():
            ours, theirs = runs[(name, "specviz", BASELINE)][0].tokens, runs[(name, "transformers", BASELINE)][0].tokens
            extras["departures"][name] = departure(ck, prompt, ours, theirs)
    return rows, extras


def _version(impl: str) -> str:
    if impl == "specviz":
        return f"specviz (torch {torch.__version__}; {native.backend()})"
    import transformers as tf

    return f"transformers {tf.__version__} (torch {torch.__version__})"


def llm_table(rows: list[dict], extras: dict, char_costs: dict | None = None) -> str:
    """The suite as text: per prompt and over the set, tau, tokens/s and speedup; departures; v(N)."""
    lines = [f"{'prompt':8} {'impl':13} {'drafter':14} {'tau':>5} {'tok/s':>7} {'speedup':>8}  same"]
    for r in rows:
        same = "" if r["same_as_baseline"] is None else ("yes" if r["same_as_baseline"] else "NO")
        lines.append(f"{r['prompt'] or 'all':8} {r['impl']:13} {r['drafter']:14} {r['tokens_per_forward']:5.2f} "
                     f"{r['tokens_per_s']:7.2f} {r['speedup']:7.2f}x  {same}")  # fmt: skip
    for name, d in extras["departures"].items():
        lines.append(f"{name}: transformers' greedy tokens " + ("equal ours" if d is None else
                     f"depart from ours at token {d['index']} (logit margin {d['margin']:.3g})"))  # fmt: skip
    curves = [("this model", extras["verify_costs"])] + ([("character model", char_costs)] if char_costs else [])
    for label, c in curves:
        lines.append(f"v(N), {label}: " + ", ".join(f"N={n} {x['ms']:.1f} ms (v {x['v']:.2f})" for n, x in c.items()))
    return "\n".join(lines) + "\n"
