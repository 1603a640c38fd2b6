"""Is speculative decoding lossless? One file over 300 lines: its two tests share one stream of runs.

Test many speculative runs against the target's exact distribution, at every generated position, so
every draft position up to K is exercised.

Each run generates n = K + 1 new tokens: the first round drafts min(K, n - 1) = K tokens, so
output positions 2 .. K+1 come from draft depths 1 .. K (accepted, or the correction drawn where
a draft was rejected) and position 1 is the first draft's or the correction's; later rounds
test the same depths again. Two tests, both with levels fixed in advance:

1. Every position: the probability integral transform (PIT). For one run, let p_j be the
   target's exact distribution of token j given the prompt and the run's tokens before j (all
   n of them from one pass of the reference model over the run's tokens after the prompt's cache,
   float64 after the softmax; a batch of runs shares the pass, ``run_probs``). Order the
   vocabulary by p_j, likeliest first (ties by id), let F_j(x) be the mass ranked before x, and
   draw v ~ Uniform(0, 1) from a generator of its own. Then

       u_j = F_j(x_j) + v * p_j(x_j)

   is Uniform(0, 1) when x_j ~ p_j (the randomised PIT: x_j falls in the slice [F_j(x),
   F_j(x) + p_j(x)) of [0, 1) with probability exactly that slice's length, and v spreads it
   evenly inside). That holds given any prefix, so u_1 .. u_n of a run are i.i.d. Uniform(0, 1)
   (Rosenblatt, 1952), and so are they across runs. A rule that over-produces likely tokens,
   as NASD's own rule does, piles u near 0. The test: per position, Pearson's chi-square of the u's
   in B equal-width bins (B = min(20, N // 5), so every bin expects at least 5); jointly, the
   sum of the per-position statistics (chi-square on the sum of their degrees of freedom,
   positions being independent). With fewer than 10 runs the positions are pooled into one
   histogram; below that, there is nothing to test.

2. The first m tokens exactly (m = 2 or 3): their joint probability is enumerated (V^(m-1)
   prefixes through the target, in chunks of bounded size) and compared with the observed
   counts by Pearson's chi-square, small cells pooled (likeliest first, into bins expecting at
   least 5). This is what the charts draw, and it is the stronger test where the bias sits in
   the first characters.

   On a real model (a word-piece vocabulary: 49,152 entries for SmolLM2) V^m cells cannot be
   listed. There the joint distribution of ALL n = K + 1 tokens is enumerated with pruning
   (``pruned_distribution``): a prefix is expanded only while its mass is at least ``min_mass``
   (and it is among the ``max_prefixes`` likeliest of its depth), and every pruned piece's mass,
   its prefix's mass times the target's probabilities of the children left out, goes to one
   "rest" cell. The cells and the rest add up to 1 (float64), so the test stays exact: a rule that
   moves mass between kept sequences, or between them and the rest, moves observed counts too.

A token the target gives probability 0 (possible only at temperature 0) proves the rule inexact
on its own. The verdict combines the two tests by Bonferroni: p = min(1, 2 min(p1, p2)).

Memory does not grow with N: a run keeps its n tokens until its PIT batch is done, and
everything else is counts (a (n, B) histogram and the V^m table of the first tokens).
"""

import math
from dataclasses import dataclass, field, replace

import torch

from models.checkpoint import Checkpoint
from models.gpt import KVCache
from specviz.charts.verdict import PQ_WORDS
from specviz.core.batch import Batch
from specviz.core.engine import Generation
from specviz.core.sampling import probs_from_logits
from specviz.core.settings import Settings
from specviz.kernels.cached_model import CachedModel
from specviz.verifiers import VERIFIERS

MAX_BINS = 20  # PIT histogram bins per position
MIN_EXPECTED = 5.0  # the usual floor on a chi-square cell's expected count
PIT_TOKENS = 1 << 11  # tokens per PIT pass (a batch of runs after the prompt's cache): bounds its activations
PIT_CELLS = 1 << 24  # rows x V per PIT pass at most: bounds the float64 probabilities of a wide vocabulary
MAX_PREFIXES = 512  # the pruned enumeration's live prefixes per depth at most (each one row of a target pass)
MAX_SAMPLES = 20_000
ALPHA = 0.001  # the verdict's level: fixed in advance, stated wherever a verdict is shown


@dataclass
class Test:
    """One chi-square test. ``p_value`` None: not enough samples to test anything."""

    statistic: float
    dof: int
    p_value: float | None


@dataclass
class ExactnessResult:
    samples: int
    new_tokens: int  # n generated per run: K + 1
    k: int
    positions: list[Test]  # the PIT test at output position j = 1 .. n
    joint: Test  # the PIT over every position
    first: Test  # exact enumeration of the first m tokens
    impossible: int  # generated tokens the target gives probability 0
    pit_counts: torch.Tensor  # (n, B) histogram of u per position
    observed: torch.Tensor  # counts of the first m tokens, (V,) * m
    expected: torch.Tensor  # their exact probabilities, float64
    tv_distance: float  # between observed frequencies and expected, first m tokens
    # Pruned enumeration (a real model): the n-token sequences kept as cells; then observed and expected are
    # (C + 1,), the cells in this order and the rest last. None: the first m tokens in full, (V,) * m.
    cells: list[tuple[int, ...]] | None = field(default=None)

    @property
    def enumerated(self) -> str:
        """What the exact test covers, in words."""
        if self.cells is None:
            return f"the first {self.expected.dim()} characters exactly"
        return (f"all {self.new_tokens} tokens' joint distribution, enumerated with pruning ({len(self.cells):,} "
                f"sequences, the other {float(self.expected[-1]):.3g} of the mass in one rest cell)")  # fmt: skip

    @property
    def p_value(self) -> float | None:
        """The verdict's p-value: 0 on an impossible token, else Bonferroni over the two tests."""
        if self.impossible:
            return 0.0
        ps = [t.p_value for t in (self.joint, self.first) if t.p_value is not None]
        return min(1.0, len(ps) * min(ps)) if ps else None

    @property
    def draft_depths(self) -> int:
        """Draft positions exercised: 1 .. this (the first round drafts K; n = K + 1)."""
        return min(self.k, self.new_tokens - 1)


def rule_sentence(name: str) -> str:
    """Which verification rule was tested, and what to expect of it."""
    v = VERIFIERS[name]
    if v.lossless:
        return (f"Verification rule tested: {name}, a lossless rule, so it is expected to pass. How it works: "
                f"{v.summary} ({PQ_WORDS}).")  # fmt: skip
    return (
        f"Verification rule tested: {name}, a LOSSY rule kept to show it failing: expected to fail once N is "
        f"large enough. How it works: {v.summary} ({PQ_WORDS})."
    )


def verdict(res: ExactnessResult, alpha: float) -> tuple[str, str]:
    """("exact" | "biased" | "unknown", a sentence saying so and what it covers)."""
    covers = (f"output positions 1–{res.new_tokens} of {res.samples:,} runs (draft positions 1–{res.draft_depths} "
              f"of K = {res.k}), and {res.enumerated}")  # fmt: skip
    p = res.p_value
    if res.impossible:
        return "biased", (f"NOT the target's distribution: {res.impossible} generated token(s) have probability 0 "
                          f"under the target. Tested: {covers}.")  # fmt: skip
    if p is None:
        return "unknown", f"Not enough samples for a verdict: raise N. Tested: {covers}."
    if p >= alpha:
        return "exact", f"No evidence of bias (p-value {p:.3g} ≥ {alpha}). Tested: {covers}."
    return "biased", f"NOT the target's distribution (p-value {p:.2g} < {alpha}): the rule is biased. Tested: {covers}."


def chi2_sf(stat: float, dof: int) -> float:
    """P(chi-square with ``dof`` degrees of freedom >= stat)."""
    a, x = torch.tensor(dof / 2, dtype=torch.float64), torch.tensor(stat / 2, dtype=torch.float64)
    return float(torch.special.gammaincc(a, x))


def chi_square(counts: torch.Tensor, probs: torch.Tensor) -> Test:
    """Pearson's chi-square of counts against probs. Outcomes are pooled, likeliest first, into
    bins that expect at least MIN_EXPECTED (a short last bin joins the one before). Outcomes of
    probability 0 are left out (callers count an observed one as proof of bias). Fewer than two
    bins: nothing to test, p_value None."""
    n = float(counts.sum())
    e = probs.flatten().double()
    c = counts.flatten().double()
    order = e.argsort(descending=True)
    order = order[e[order] > 0]
    e, c = (e[order] * n).tolist(), c[order].tolist()
    bins_e, bins_o, acc_e, acc_o = [], [], 0.0, 0.0
    for ei, ci in zip(e, c, strict=True):
        acc_e, acc_o = acc_e + ei, acc_o + ci
        if acc_e >= MIN_EXPECTED:
            bins_e.append(acc_e)
            bins_o.append(acc_o)
            acc_e = acc_o = 0.0
    if bins_e:
        bins_e[-1] += acc_e
        bins_o[-1] += acc_o
    if len(bins_e) < 2:
        return Test(0.0, 0, None)
    stat = sum((o - x) ** 2 / x for o, x in zip(bins_o, bins_e, strict=True))
    return Test(stat, len(bins_e) - 1, chi2_sf(stat, len(bins_e) - 1))


def uniform_test(hist: torch.Tensor) -> Test:
    """Chi-square of a histogram against equal bins (each expects >= MIN_EXPECTED by construction)."""
    B = hist.numel()
    if B < 2:
        return Test(0.0, 0, None)
    return chi_square(hist, torch.full((B,), 1.0 / B, dtype=torch.float64))


def tv(a: torch.Tensor, b: torch.Tensor) -> float:
    """Total variation distance: half the L1 distance, the most any event's probability differs."""
    return 0.5 * float((a - b).abs().sum())


@torch.no_grad()
def run_probs(model, past: KVCache | None, root: int, runs: torch.Tensor, temperature: float) -> torch.Tensor:
    """The target's distribution at every token of every run, float64: row j of a run is p_j, given
    the prompt and the run's tokens before j. ``past`` is the reference model's cache of the prompt
    but its last token, ``root`` (None for a one-token prompt); the batch of runs shares it, so the
    prompt is not run again per run.
    The reference GPT, not the lean forward the engine runs: the harness checks the engine with an
    implementation of its own. runs: (b, n) tokens. -> (b, n, V)"""
    b, n = runs.shape
    inputs = torch.cat([torch.full((b, 1), root), runs[:, :-1]], 1)  # (b, n): what predicts each token
    P, batch = 0, None
    if past is not None:
        P, batch = (
            past.length,
            KVCache(tuple((k.expand(b, -1, -1, -1), v.expand(b, -1, -1, -1)) for k, v in past.layers)),
        )
    device = next(model.parameters()).device
    logits, _ = model(inputs.to(device), torch.arange(P, P + n, device=device), batch)
    return probs_from_logits(logits.cpu(), temperature)  # (b, n, V)


@torch.no_grad()
def exact_distribution(model, prompt: list[int], temperature: float, n_tokens: int = 3) -> torch.Tensor:
    """Joint distribution of the next n_tokens (1..3) after the prompt, float64. (V,) * n_tokens

    The prompt is prefilled once; every continuation is then a tree after it, scored in one lean
    pass per first token (tree attention: each leaf sees the prompt, its parent and itself), so the
    V^2 three-token continuations cost V passes of V + 2 tokens, not V^2 passes over the prompt."""
    V, L = model.config.vocab_size, len(prompt)
    if not 1 <= n_tokens <= 3:
        raise ValueError("the exact enumeration covers 1 to 3 tokens")
    if L + n_tokens - 1 > model.config.block_size:
        raise ValueError("prompt too long for the exact enumeration; use a shorter prompt")
    lm = CachedModel(model)
    lm.sync(prompt)  # the cache holds prompt[:-1]; its last token is every pass's root
    root = prompt[-1]

    def star(path: list[int]) -> torch.Tensor:
        """After root + path (a chain), every token as one more leaf: (n + V, V) probabilities; row
        len(path) is the distribution after the path, row len(path) + 1 + x after path + x."""
        n = len(path) + 1
        mask = torch.zeros(n + V, n + V, dtype=torch.bool)
        mask[:n, :n] = torch.ones(n, n, dtype=torch.bool).tril()  # the chain: causal
        mask[n:, :n] = True  # each leaf sees the chain...
        mask[range(n, n + V), range(n, n + V)] = True  # ...and itself
        positions = list(range(L - 1, L - 1 + n)) + [L - 1 + n] * V
        logits = lm.forward([root, *path, *range(V)], positions, mask)  # (n+V, V)
        return probs_from_logits(logits, temperature)

    if n_tokens == 1:
        return probs_from_logits(lm.forward([root], [L - 1]), temperature)[0]
    first = star([])  # row 0: after the prompt; row 1 + a: after the prompt and a
    if n_tokens == 2:
        return first[0][:, None] * first[1:]
    joint = torch.zeros(V, V, V, dtype=torch.float64)
    for a in range(V):
        rows = star([a])  # row 1: after a; row 2 + b: after a, b
        joint[a] = first[0][a] * rows[1][:, None] * rows[2:]
    return joint


@torch.no_grad()
def hf_run_probs(model, past, root: int, runs: torch.Tensor, temperature: float) -> torch.Tensor:
    """run_probs for a transformers model: plain causal passes over the runs after a DynamicCache of the prompt
    but its last token (``past``, None for a one-token prompt), expanded to the batch. Not the engine's pass
    (HFTarget: a 4D mask, its cache cropped and gathered), so the lab checks the engine against the model
    itself. runs: (b, n) tokens. -> (b, n, V)"""
    from transformers import DynamicCache

    b, n = runs.shape
    inputs = torch.cat([torch.full((b, 1), root), runs[:, :-1]], 1)  # (b, n)
    device = model.get_output_embeddings().weight.device
    P, cache = 0, DynamicCache(config=model.config)
    if past is not None:
        for i, layer in enumerate(past.layers):
            cache.update(layer.keys.expand(b, -1, -1, -1), layer.values.expand(b, -1, -1, -1), i)
        P = past.get_seq_length()
    positions = torch.arange(P, P + n, device=device).expand(b, n)
    logits = model(input_ids=inputs.to(device), position_ids=positions, past_key_values=cache, use_cache=True).logits
    return probs_from_logits(logits.cpu(), temperature)  # (b, n, V)


def reference(target, prompt: list[int], temperature: float):
    """The target's distributions by its reference implementation, after the prompt: probs(runs (b, n)) ->
    (b, n, V), row j of a run given the prompt and the run's tokens before j. The prompt but its last token is
    run once, into a cache every batch shares."""
    model, head = target.model, prompt[:-1]
    if not target.bpe:
        past = None
        if head:
            device = next(model.parameters()).device
            with torch.no_grad():
                _, past = model(torch.tensor([head], device=device), torch.arange(len(head), device=device))
        return lambda runs: run_probs(model, past, prompt[-1], runs, temperature)
    from transformers import DynamicCache

    past = None
    if head:
        past = DynamicCache(config=model.config)
        device = model.get_output_embeddings().weight.device
        with torch.no_grad():
            model(input_ids=torch.tensor([head], device=device), past_key_values=past, use_cache=True)
    return lambda runs: hf_run_probs(model, past, prompt[-1], runs, temperature)


@dataclass
class Pruned:
    """A joint distribution of n tokens enumerated with pruning: the kept sequences and their exact
    probabilities; ``rest`` is the exact mass of everything pruned (cells + rest = 1 in float64)."""

    cells: list[tuple[int, ...]]  # the kept n-token sequences, likeliest first
    probs: torch.Tensor  # (C,) float64, their probabilities
    rest: float  # the pruned mass: the sum of the pruned pieces themselves, not 1 - sum(probs)

    def expected(self) -> torch.Tensor:
        """(C + 1,): the cells, then the rest."""
        return torch.cat([self.probs, torch.tensor([self.rest], dtype=torch.float64)])


def pruned_distribution(probs, V: int, n: int, min_mass: float, max_prefixes: int = MAX_PREFIXES) -> Pruned:
    """The joint distribution of the next n tokens, depth by depth: a prefix of mass m is expanded by one pass
    row (probs, as ``reference`` returns it), each child x getting m * p(x); a child is kept where that is at
    least ``min_mass`` and it is among the ``max_prefixes`` likeliest of its depth, and the rest of the mass,
    piece by piece, goes to ``rest``. min_mass 0 and max_prefixes >= V^n: every sequence, no rest."""
    live: list[tuple[tuple[int, ...], float]] = [((), 1.0)]
    pieces: list[float] = []  # pruned masses, summed once with fsum
    for d in range(n):
        children: list[tuple[tuple[int, ...], float]] = []
        chunk = max(1, PIT_CELLS // (V * (d + 1)))
        for lo in range(0, len(live), chunk):
            part = live[lo : lo + chunk]
            runs = torch.tensor([[*prefix, 0] for prefix, _ in part], dtype=torch.long)  # (b, d + 1)
            mass = torch.tensor([m for _, m in part], dtype=torch.float64)[:, None] * probs(runs)[:, d]  # (b, V)
            keep = mass >= min_mass if min_mass > 0 else torch.ones_like(mass, dtype=torch.bool)
            rows, cols = keep.nonzero(as_tuple=True)
            kept = mass[rows, cols]
            pieces.append(float(mass.masked_fill(keep, 0).sum()))
            children += [(part[r][0] + (c,), m) for r, c, m in zip(rows.tolist(), cols.tolist(), kept.tolist(),
                                                                    strict=True)]  # fmt: skip
        children.sort(key=lambda c: -c[1])
        pieces += [m for _, m in children[max_prefixes:]]
        live = children[:max_prefixes]
    return Pruned([c for c, _ in live], torch.tensor([m for _, m in live], dtype=torch.float64), math.fsum(pieces))


def pit_values(p: torch.Tensor, tokens: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Randomised PIT u = F(x) + v p(x), the vocabulary ordered by p descending (ties by id).
    p: (..., V) float64, tokens and v: (...,). Returns (...,) in [0, 1]."""
    V = p.size(-1)
    ids = torch.arange(V).expand_as(p)
    px = p.gather(-1, tokens[..., None])  # (..., 1)
    before = (p > px) | ((p == px) & (ids < tokens[..., None]))
    return (p * before).sum(-1) + v * px.squeeze(-1)


def run_exactness(target: Checkpoint, prompt: list[int], settings: Settings, samples: int, draft_model=None,
                  n_tokens: int = 3, progress=None, pit_seed: int = 12345, batch_size: int = 1,
                  min_mass: float | None = None, max_prefixes: int = MAX_PREFIXES) -> ExactnessResult:  # fmt: skip
    """Run ``samples`` speculative generations of K + 1 tokens (seeds settings.seed + i) and test
    them; ``n_tokens`` (1..3) first tokens are also enumerated exactly. ``batch_size`` > 1: the runs
    are decoded batch_size at a time, each inside a batch (specviz/core/batch.py: one target pass per
    round for all of them). ValueError up front for a request out of bounds.

    On a real model (target.bpe) all K + 1 tokens are enumerated with pruning instead (``n_tokens`` is not
    used): ``min_mass`` (default MIN_EXPECTED / samples, a cell that expects 5 runs) and ``max_prefixes``
    bound it; runs are decoded one at a time."""
    settings.check()
    model, V, B_ctx = target.model, target.config.vocab_size, target.config.block_size
    n = settings.k + 1
    m = min(n_tokens, n)
    if not 1 <= samples <= MAX_SAMPLES:
        raise ValueError(f"the number of runs must be between 1 and {MAX_SAMPLES:,}, got {samples}")
    if not prompt:
        raise ValueError("the prompt is empty")
    if len(prompt) + n - 1 > B_ctx:
        raise ValueError(f"the prompt and the {n} generated tokens must fit in one window of {B_ctx}: keep the "
                         f"prompt's last {B_ctx - n + 1} characters")  # fmt: skip
    if target.bpe and batch_size > 1:
        raise ValueError("a real model's runs are decoded one at a time: batch_size must be 1")
    probs = reference(target, prompt, settings.temperature)
    pruned = None
    if target.bpe:
        if min_mass is None:
            min_mass = MIN_EXPECTED / samples
        pruned = pruned_distribution(probs, V, n, min_mass, max_prefixes)
        expected = pruned.expected()
        index = {c: i for i, c in enumerate(pruned.cells)}
        observed = torch.zeros(len(pruned.cells) + 1, dtype=torch.long)
    else:
        expected = exact_distribution(model, prompt, settings.temperature, m)
        observed = torch.zeros([V] * m, dtype=torch.long)
    bins = min(MAX_BINS, samples // int(MIN_EXPECTED))
    pooled = bins < 2  # too few runs for a histogram per position: pool the positions
    if pooled:
        bins = max(1, min(MAX_BINS, samples * n // int(MIN_EXPECTED)))
    hist = torch.zeros(n, bins, dtype=torch.long)
    pit_gen = torch.Generator().manual_seed(pit_seed)
    impossible = 0

    run = replace(settings, max_new_tokens=n)
    first = Generation(target, prompt, run, draft_model)
    first.target.sync(prompt)  # the prompt's cache, copied into every run
    shared = None if first.drafter.stateful else first.drafter
    batch, step = [], max(1, min(PIT_TOKENS, PIT_CELLS // V) // n)

    def flush() -> None:
        nonlocal impossible
        toks = torch.tensor(batch)  # (b, n)
        p = probs(toks)  # (b, n, V)
        impossible += int((p.gather(-1, toks[..., None]) == 0).sum())
        u = pit_values(p, toks, torch.rand(toks.shape, generator=pit_gen, dtype=torch.float64))
        idx = (u * bins).long().clamp_(0, bins - 1)  # (b, n)
        hist.add_(torch.nn.functional.one_hot(idx, bins).sum(0))
        batch.clear()

    for lo in range(0, samples, batch_size):
        gens = []
        for i in range(lo, min(lo + batch_size, samples)):
            gen = Generation(target, prompt, replace(run, seed=settings.seed + i), draft_model, drafter=shared)
            gen.target.copy_from(first.target)
            gens.append(gen)
        traces = Batch(gens).run() if batch_size > 1 else [gens[0].run()]
        for i, trace in enumerate(traces, lo):
            tokens = trace.tokens  # the n generated ones; the trace is dropped with its generation
            if pruned is None:
                observed[tuple(tokens[:m])] += 1
            else:
                observed[index.get(tuple(tokens), len(pruned.cells))] += 1
            batch.append(tokens)
            if len(batch) >= step:
                flush()
            if progress:
                progress(i + 1)
    if batch:
        flush()
    positions = [uniform_test(hist[j]) if not pooled else Test(0.0, 0, None) for j in range(n)]
    if pooled:
        joint = uniform_test(hist.sum(0))
    else:
        stat, dof = sum(t.statistic for t in positions), sum(t.dof for t in positions)
        joint = Test(stat, dof, chi2_sf(stat, dof))
    return ExactnessResult(samples, n, settings.k, positions, joint, chi_square(observed, expected), impossible, hist,
                           observed, expected, tv(observed.double() / samples, expected),
                           pruned.cells if pruned else None)  # fmt: skip
