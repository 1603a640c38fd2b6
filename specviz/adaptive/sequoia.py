"""Sequoia's tree shapes ("Sequoia: Scalable, Robust, and Hardware-aware Speculative Decoding", Chen
et al., 2024): for a node budget n and a depth limit K, the draft tree whose shape maximises the
expected number of accepted tokens, by dynamic programming over measured acceptance rates.

The model. A drafter that ranks each node's children (best first) sends, at a node of the tree, its
rank-0, rank-1, ... children. Let a[d][r] be the probability that, once a node at depth d - 1 was
accepted, its rank-r child at depth d is the one accepted (token-wise verification accepts at most
one child). Sequoia assumes it depends on the rank only; here it depends on the depth as well,
measured so. A node is accepted only if every node on its path is, so the expected number of accepted
draft tokens of a tree T, its nodes named by their rank paths (r_1, ..., r_d), is

    F(T) = sum over nodes v of  a[1][r_1] * a[2][r_2] * ... * a[d][r_d]          (tau = 1 + F)

The programme. A node's children must be ranks 0, 1, ..., j - 1 (a drafter sends its best first),
so let V(d, m) be the most that m nodes hanging below a node at depth d can add, and W(d, r, m) the
most with ranks r, r + 1, ... only:

    W(d, r, 0) = 0        W(d, R, m > 0) = -inf        V(d, m) = W(d, 0, m),   V(K, m > 0) = -inf
    W(d, r, m) = max over 1 <= s <= m of  a[d+1][r] * (1 + V(d + 1, s - 1)) + W(d, r + 1, m - s)

(the rank-r child takes s nodes: itself and s - 1 below it). The best tree of at most n nodes is
argmax over m <= n of V(0, m), O(K R n^2). tests/unit/test_sequoia.py checks it against every tree.

The rates. ``measure`` walks the target's own generations from prompts of the training split: at
each step at depth d <= K of a round, the drafter's ranked children of the context are the candidates and
a[d][r] gathers p(c_r), the chance token-wise verification accepts the deterministic rank-r child
(at T = 0: the argmax is c_r); the target's token then decides whether the round goes on (it was a
candidate and d < K) or a new round starts. ``kept_rates`` keeps them under .cache/sequoia/, keyed by the
checkpoints' sha256, the drafter's knobs, the temperature and this file.

Sampled children (Sequoia's own case: the neural tree at T > 0). The rank-r child is the r-th draw from
the draft's q (without replacement: q_r is q with the earlier draws removed), tried against the residual
p_r left by the earlier rejections. Given the earlier draws x_0..x_{r-1}, it is accepted with chance
prod_{j<r} (1 - min(1, p_j(x_j) / q_j(x_j))) * sum_x min(p_r(x), q_r(x)); the walk draws the siblings,
gathers that chance (the expectation over the last draw and the coins: less noise than a count), and
tries them as the verifier does, so the token it emits is the target's and the depth goes on only when
a child was kept.
"""

import hashlib
import json
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import torch

from models.artifacts import read_manifest
from specviz.core.diskcache import cache_dir, digest, files_digest, kept_or_made
from specviz.core.sampling import Stream, draw, probs_from_logits, uniform, without
from specviz.kernels.cached_model import CachedModel

SHAPES = ("dynamic", "sequoia")  # the tree_shape knob: grown from confidence, or Sequoia's fixed shape
MAX_RANKS = 5  # children per node the programme may use (the distilled table ranks its top 5)
MIN_REACHED = 30  # a depth reached fewer times than this takes the rates of the depth above
PROMPTS, PROMPT_LEN, NEW_TOKENS = 8, 64, 256  # the walk: windows of the training split, target tokens each
CACHE = cache_dir("sequoia")


@dataclass(frozen=True)
class Rates:
    accept: tuple[tuple[float, ...], ...]  # accept[d - 1][r]: a[d][r], depth d = 1.. (D, R)
    reached: tuple[int, ...]  # steps taken at each depth: the measurement's sample sizes (D,)
    source: str = ""  # how they were measured, for the page and the CLI

    def at(self, depth: int, rank: int) -> float:
        """a[depth][rank], from the deepest depth at or above ``depth`` measured MIN_REACHED times."""
        d = min(depth, len(self.accept))
        while d > 1 and self.reached[d - 1] < MIN_REACHED:
            d -= 1
        row = self.accept[d - 1]
        return row[rank] if rank < len(row) else 0.0


def expected_accepted(paths, rates: Rates) -> float:
    """F(T): the sum over the tree's nodes (rank paths) of the product of the rates along each."""
    return sum(reach(paths, rates))


@cache
def _optimal(rates: Rates, budget: int, depth: int, ranks: int) -> tuple[float, tuple[tuple[int, ...], ...]]:
    neg = float("-inf")
    # V[d][m] and the choices that reach it; W is rebuilt per depth, from the deepest up.
    V = [[neg] * (budget + 1) for _ in range(depth + 1)]
    take = {}  # (d, r, m) -> s: the nodes rank r takes in the best W(d, r, m)
    V[depth][0] = 0.0
    for d in range(depth - 1, -1, -1):
        W = [[neg] * (budget + 1) for _ in range(ranks + 1)]
        for r in range(ranks, -1, -1):
            W[r][0] = 0.0
            if r == ranks:
                continue
            a = rates.at(d + 1, r)
            for m in range(1, budget + 1):
                for s in range(1, m + 1):
                    below, rest = V[d + 1][s - 1], W[r + 1][m - s]
                    if below == neg or rest == neg:
                        continue
                    value = a * (1 + below) + rest
                    if value > W[r][m]:
                        W[r][m], take[d, r, m] = value, s
        V[d] = W[0]
    best_m = max(range(budget + 1), key=lambda m: (V[0][m], -m))  # ties: the smaller tree

    def build(d: int, m: int, prefix: tuple[int, ...]) -> list[tuple[int, ...]]:
        out, r = [], 0
        while m > 0:
            s = take[d, r, m]
            node = (*prefix, r)
            out += [node, *build(d + 1, s - 1, node)]
            m, r = m - s, r + 1
        return out

    return V[0][best_m], tuple(build(0, best_m, ()))


def optimal_tree(rates: Rates, budget: int, depth: int, ranks: int = MAX_RANKS) -> tuple[tuple[int, ...], ...]:
    """The rank paths of the tree of at most ``budget`` nodes and ``depth`` levels with the largest
    F (ties: fewest nodes), parents before children."""
    return _optimal(rates, budget, depth, ranks)[1]


def rank_paths(parents: list[int]) -> list[tuple[int, ...]]:
    """Each node's rank path in a depth-first tree whose siblings come best first (its place among its
    siblings is its rank): how a grown tree is scored under the same model."""
    paths: list[tuple[int, ...]] = []
    seen: dict[int, int] = {}  # parent -> children so far
    for p in parents:
        rank = seen.get(p, 0)
        seen[p] = rank + 1
        paths.append((*(paths[p] if p >= 0 else ()), rank))
    return paths


def reach(paths, rates: Rates) -> list[float]:
    """Per node, the model's chance that verification accepts it: the product of the rates on its path."""
    out = []
    for path in paths:
        prod = 1.0
        for depth, rank in enumerate(path, 1):
            prod *= rates.at(depth, rank)
        out.append(prod)
    return out


def grow_shape(children, root, shape) -> tuple[list[int], list[int], list]:
    """A deterministic draft tree of a fixed shape: ``children(state) -> [(token, score, state)]``
    ranked best first, as for grow_tree; node (r_1, ..., r_d) is its parent's rank-r_d child. A node
    whose parent has fewer children is left out, with what hangs below it. Flattened depth first,
    siblings by rank. -> (tokens, parents, [(depth, score, state)] per node)"""
    from specviz.drafters.base import depth_first  # drafters import this module: read at call time

    kept, made = [], {(): (None, 1.0, root)}
    for path in sorted(shape, key=len):
        parent = made.get(path[:-1])
        if parent is None:
            continue
        kids = children(parent[2])
        if path[-1] < len(kids):
            made[path] = kids[path[-1]]
            kept.append(path)
    order, parents = depth_first(kept)
    return ([made[kept[i]][0] for i in order], parents,
            [(len(kept[i]), made[kept[i]][1], made[kept[i]][2]) for i in order])  # fmt: skip


def training_prompts(ids: list[int], newline: int, n: int = PROMPTS, length: int = PROMPT_LEN) -> list[list[int]]:
    """n windows of ``length`` tokens, evenly spaced over the training split (the first 90%), each
    starting after a newline."""
    train = ids[: int(0.9 * len(ids))]  # specviz.training.train.split's convention
    out = []
    for i in range(n):
        s = max(1, i * (len(train) - 2 * length) // n)
        while s < len(train) - length and train[s - 1] != newline:
            s += 1
        out.append(list(train[s : s + length]))
    return out


def sampled_children(
    p: torch.Tensor, q: torch.Tensor, ranks: int, sampling: str | None, gen
) -> tuple[list[float], int, bool]:
    """A node whose children are drawn from ``q`` (V,), tried in turn against the target's ``p`` (V,) as the
    multi-draft verifier tries them (specviz/verifiers/multidraft.py). -> (per rank, its chance of being
    the child kept given the earlier draws; the token the node emits; whether it is a kept child's)"""
    p, q = p.double(), q.double()
    gains, reach, kept = [], 1.0, None
    for _ in range(ranks):
        if reach <= 0 or float(q.sum()) <= 0:
            break
        gains.append(reach * float(torch.minimum(p, q).sum()))
        x = draw(q, gen)
        alpha = min(1.0, float(p[x]) / float(q[x]))
        if kept is None and uniform(gen) < alpha:
            kept = x  # the verifier keeps it; the later ranks' chances still count, given its rejection
        reach *= 1.0 - alpha
        residual = (p - q).clamp_min(0.0)
        total = float(residual.sum())
        p = residual / total if total > 0 else p
        q = without(q, x) if sampling == "without-replacement" else q
    return gains, (draw(p, gen) if kept is None else kept), kept is not None


@torch.no_grad()
def measure(model, ranked: Callable[[list[int], int], object], prompts: list[list[int]], temperature: float,
            depth: int, new_tokens: int = NEW_TOKENS, ranks: int = MAX_RANKS, seed: int = 0,
            sampling: str | None = None) -> Rates:  # fmt: skip
    """a[d][r] for d <= ``depth`` (the rounds' K) from the target's own generations after ``prompts``
    (see the module's docstring). ``ranked(context, d)``: the children of a node at depth d - 1 of a
    round whose sequence is ``context``: a list of tokens, best first (deterministic children), or the
    (V,) q they are drawn from in turn as ``sampling`` says (sampled children)."""
    sums = [[0.0] * ranks for _ in range(depth)]
    reached = [0] * depth
    gen = Stream().manual_seed(seed)
    target = CachedModel(model)
    for prompt in prompts:
        context, d = list(prompt), 1
        for _ in range(new_tokens):
            p = probs_from_logits(target.next_logits(context), temperature)  # (V,)
            if d > depth:  # the bonus after a full path: not a drafted node
                y, d = draw(p, gen), 1
            else:
                kids = ranked(context, d)
                reached[d - 1] += 1
                if isinstance(kids, torch.Tensor):
                    gains, y, went_on = sampled_children(p, kids, ranks, sampling, gen)
                else:
                    cands = list(kids)[:ranks]
                    row = p.tolist()
                    gains = [row[c] for c in cands]
                    y = draw(p, gen)
                    went_on = y in cands
                for r, g in enumerate(gains):
                    sums[d - 1][r] += g
                d = d + 1 if went_on else 1
            context.append(y)
    accept = tuple(tuple(s / n if n else 0.0 for s in row) for row, n in zip(sums, reached, strict=True))
    source = f"measured over {sum(reached):,} steps after {len(prompts)} training-split prompts at T = {temperature:g}"
    return Rates(accept, tuple(reached), source)


def rates_key(checkpoint, drafter: str, knobs: dict, temperature: float, depth: int,
              artifacts: tuple[Path, ...] = ()) -> dict:  # fmt: skip
    """What decides the measured rates: the target's weights and the drafter's artifacts (their
    recorded sha256), its knobs, the temperature, the rounds' depth and this file."""
    path = Path(checkpoint.path)
    shas = {p.name: read_manifest(p.parent).get(p.name, str(p)) for p in (path, *artifacts)}
    dtype = str(next(checkpoint.model.parameters()).dtype)
    return {"weights": shas, "dtype": dtype, "drafter": drafter, "knobs": knobs, "temperature": temperature, "depth": depth,
            "code": files_digest([__file__]), "walk": [PROMPTS, PROMPT_LEN, NEW_TOKENS, MAX_RANKS]}  # fmt: skip


_DIGESTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # model -> weights_digest: once per model


def weights_digest(model) -> str:
    """sha256 of a model's tensors, names and values: what keys rates measured with a draft model that
    came to the drafter as weights, not as a file whose sha256 is recorded. Once per model object (a
    loaded model is never changed: models/checkpoint.py)."""
    if model in _DIGESTS:
        return _DIGESTS[model]
    h = hashlib.sha256()
    for name, t in model.state_dict().items():
        h.update(name.encode())
        h.update(t.detach().to(torch.float64).cpu().numpy().tobytes())
    _DIGESTS[model] = h.hexdigest()
    return _DIGESTS[model]


def drafter_rates(checkpoint, drafter: str, knobs: dict, temperature: float, depth: int,
                  ranked: Callable[[list[int], int], object], artifacts: tuple[Path, ...] = (),
                  sampling: str | None = None, corpus: Path | None = None) -> Rates:  # fmt: skip
    """A shaped drafter's rates by rank and depth against the target ``checkpoint`` at ``temperature``,
    rounds at most ``depth`` deep: kept on disk (rates_key), else measured on the training split's
    prompts (``ranked`` and ``sampling`` as for measure); ValueError, one line, with no corpus."""
    from specviz.training.distill import DEFAULT_CORPUS  # the training package reads models: at call time

    corpus = Path(DEFAULT_CORPUS if corpus is None else corpus)
    key = rates_key(checkpoint, drafter, {**knobs, "sampling": sampling}, temperature, depth, artifacts)

    def measure_now() -> Rates:
        if not corpus.is_file():
            raise ValueError(f"the Sequoia tree shape measures its rates on the corpus; none at {corpus}")
        tok = checkpoint.tokenizer
        prompts = training_prompts(tok.encode(corpus.read_text(encoding="utf-8")), tok.encode("\n")[0])
        return measure(checkpoint.model, ranked, prompts, temperature, depth=depth, sampling=sampling)

    return kept_rates(key, measure_now)


_KEPT: dict[str, Rates] = {}  # this process's, by key: a generation per round of the app builds a drafter


def kept_rates(key: dict, measure_now: Callable[[], Rates], cache: Path | None = None) -> Rates:
    """The rates for ``key``: this process's, else the file kept under .cache/sequoia/, else
    ``measure_now()`` (a few seconds), kept for next time."""
    name = digest(key)
    if name in _KEPT:
        return _KEPT[name]
    path = (CACHE if cache is None else cache) / f"{name}.json"

    def read() -> Rates | None:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            if record["key"] != json.loads(json.dumps(key)):
                return None  # another key's
            return Rates(tuple(tuple(map(float, row)) for row in record["accept"]),
                         tuple(map(int, record["reached"])), str(record["source"]) + " (kept)")  # fmt: skip
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def encode(rates: Rates) -> bytes:
        record = {"key": key, "accept": rates.accept, "reached": rates.reached, "source": rates.source}
        return json.dumps(record, indent=1).encode()

    _KEPT[name] = rates = kept_or_made(path, read, measure_now, encode)
    return rates


__all__ = ["SHAPES", "Rates", "drafter_rates", "expected_accepted", "grow_shape", "kept_rates", "measure",
           "optimal_tree", "rank_paths", "reach", "sampled_children", "weights_digest"]  # fmt: skip
