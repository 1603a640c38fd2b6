"""Lookahead decoding (Fu, Bailis, Stoica and Zhang, 2024, "Break the Sequential Dependency of
LLM Inference Using Lookahead Decoding", arXiv 2402.02057): no draft model. The target itself
guesses future tokens by Jacobi iteration, in the same forward pass that verifies the previous
guesses.

Jacobi decoding. Greedy decoding solves y_i = argmax p(. | x, y_1 .. y_{i-1}) for i = 1, 2, ...
one equation per pass. Jacobi iteration guesses all of y_1 .. y_W at once and updates every
guess in parallel from the previous guesses: y_i' = argmax p(. | x, y_1 .. y_{i-1}). Its fixed
point is the greedy continuation, reached in at most W passes (the first wrong position is fixed
each pass), but alone it rarely gains: a guess is seldom right before its prefix is.

The lookahead branch: a 2D window of N - 1 levels (the last N - 1 Jacobi steps) by W columns.
Cell (j, i), level j, column i, is a guess for the token at offset j + i after the root (the
root is the last generated token, offset 0; it is cell (0, 0)). In one pass:

    cell (0, i)   sees the root and cells (0, 1 .. i)                 (level 0: a causal row)
    cell (j, i)   sees the root, cells (0, 1 .. i) and (1 .. j, i)    (j >= 1: its column)

so the top cell of column i reads the chain root, (0,1) .. (0,i), (1,i) .. (N-2,i) at offsets
0 .. i + N - 2 and its logits predict offset i + N - 1: one Jacobi update along that chain.
Levels hold the same positions one Jacobi step apart (cell (j + 1, i - 1) and cell (j, i) are
both offset j + i).

The n-gram pool. After the pass, column i's chain read upwards plus its prediction is an n-gram
of N tokens at consecutive positions: (cell (0, i), cell (1, i), .., cell (N-2, i), prediction).
It goes into the pool keyed by its first token (at most G n-grams per key, the most recent first,
duplicates moved to the front). As LADE's POOL_FROM_PROMPT, the pool starts with the prompt's
n-grams (each entry keeps its source, so the step page can tell the two apart).

The verification branch. Each round, the pool's n-grams whose first token is the root are the
candidates: their N - 1 continuations (cut to K) merged into one deterministic tree (shared
prefixes merged, siblings most recent first) and verified by the engine's usual tree attention.
The lookahead window rides in the same pass as extra tokens (Draft.extra): the engine hides them
from the root and the candidates, so verification sees exactly the rows it would see without
them, and never keeps them in the KV cache.

After the round, the window moves on by the e tokens the round emitted: the new cell (j, i)
guesses offset e + j + i of the old root, which the old level j + 1 held in column i + e - 1 (for
e = 1: level j takes level j + 1, the top level takes the new predictions; this is the paper's
"drop the oldest level, append the newest"). Cells with no source (the right edge when e > 1, or
columns that did not fit in the context window) repeat their left neighbour or keep their guess.

Exactness. Candidates are point masses (q one-hot), so the lossless verifier accepts a candidate
token x with probability p(x) and otherwise zeroes it and renormalises: exact at every temperature.
At T = 0 a candidate is accepted iff it is the argmax: the output equals greedy decoding. At T > 0
the window still guesses the target's greedy tokens (argmax of each row, whatever the temperature),
and a candidate that is the argmax is accepted only with probability p(argmax) < 1: that is what
sampling costs lookahead (the step page counts it per round: charts/lookahead.sampling_cost). The window starts as tokens drawn from the
prompt with the run's generator (LADE's initialisation), so a seed reproduces a run.
"""

from functools import cache

import torch

from specviz.core.target import room
from specviz.drafters.base import Draft, Drafter, Extra, depth_first


class NGramPool:
    """N-grams keyed by their first token: per key at most ``per_key`` continuations (N - 1
    tokens), the most recently seen first. ``source`` remembers where each n-gram was first seen."""

    def __init__(self, n: int, per_key: int):
        self.n, self.per_key = n, per_key
        self.grams: dict[int, list[tuple[int, ...]]] = {}
        self.source: dict[tuple[int, ...], str] = {}  # the whole n-gram -> "prompt" or "jacobi"
        self.size = 0  # n-grams held, kept as they come and go: every round's notes read it

    def add(self, gram: tuple[int, ...], source: str) -> bool:
        """Put an n-gram at the front of its key's list. -> True if it was not there."""
        assert len(gram) == self.n
        row = self.grams.setdefault(gram[0], [])
        before = len(row)
        new = gram[1:] not in row
        if not new:
            row.remove(gram[1:])
        row.insert(0, gram[1:])
        del row[self.per_key :]
        self.size += len(row) - before
        self.source.setdefault(gram, source)
        return new

    def candidates(self, token: int) -> list[tuple[int, ...]]:
        return list(self.grams.get(token, []))

    def __len__(self) -> int:
        return self.size


def ngram_tree(grams: list[tuple[int, ...]], k: int) -> tuple[list[int], list[int], list[int]]:
    """Merge n-gram continuations, cut to k tokens, into one tree (shared prefixes are one path;
    siblings ranked by first appearance), depth first. -> (tokens, parents, the gram each node
    first came from)"""
    rank: dict[tuple[int, ...], tuple[int, ...]] = {}  # token prefix -> its path of sibling ranks
    kids: dict[tuple[int, ...], int] = {}
    tokens, paths, origin = [], [], []
    for g, gram in enumerate(grams):
        path: tuple[int, ...] = ()
        for d in range(min(k, len(gram))):
            prefix = gram[: d + 1]
            if prefix not in rank:
                rank[prefix] = path + (kids.get(path, 0),)
                kids[path] = kids.get(path, 0) + 1
                tokens.append(gram[d])
                paths.append(rank[prefix])
                origin.append(g)
            path = rank[prefix]
    order, parents = depth_first(paths)
    return [tokens[i] for i in order], parents, [origin[i] for i in order]


@cache
def window_layout(n_levels: int, cols: int) -> tuple[tuple[tuple[int, int], ...], torch.Tensor]:
    """The cells of a window's first ``cols`` columns in pass order: level 0 columns 1.. (column 0
    is the root), then levels 1.. column by column; and the lookahead mask among them (module
    docstring), (E, E) bool. Cached, read-only: a run has one shape, or a few near the window's end,
    and setting the mask cell by cell would cost a shadow draft a fifth of a forward pass."""
    cells = tuple([(0, i) for i in range(1, cols)] + [(j, i) for j in range(1, n_levels) for i in range(cols)])
    row = {cell: e for e, cell in enumerate(cells)}
    among = torch.zeros(len(cells), len(cells), dtype=torch.bool)
    for (j, i), e in row.items():
        for c in range(1, i + 1):  # level 0 up to its column
            among[e, row[(0, c)]] = True
        for level in range(1, j + 1):  # its column, up to itself
            among[e, row[(level, i)]] = True
    return cells, among


def window_extra(levels: list[list[int]], cols: int, n_nodes: int) -> tuple[Extra, dict[tuple[int, int], int]]:
    """The window's first ``cols`` columns (window_layout) as extra tokens of a verify pass over
    [root + n_nodes nodes]. -> (Extra, cell (j, i) -> its row among the extras)"""
    cells, among = window_layout(len(levels), cols)
    base = 1 + n_nodes  # the extras' first index among the pass's inputs
    mask = torch.zeros(len(cells), base + len(cells), dtype=torch.bool)  # (E, 1 + N + E)
    mask[:, 0] = True  # every cell sees the root
    mask[:, base:] = among
    tokens = [levels[j][i] for j, i in cells]
    return Extra(tokens, [j + i for j, i in cells], mask), {cell: e for e, cell in enumerate(cells)}


class LookaheadDrafter(Drafter):
    name = "lookahead"
    summary = "n-grams collected from Jacobi iterations run inside the verify pass"
    paper = "Lookahead decoding (Fu, Bailis, Stoica and Zhang, 2024, arXiv 2402.02057)"
    preset = "Counting"
    glossary = (
        "Lookahead decoding needs no drafter: the target guesses ahead by itself. Besides the candidates, its "
        "verify pass carries a window of W guessed future characters kept over the last N - 1 Jacobi steps; every "
        "pass updates each guess from the guesses before it (Jacobi iteration: the fixed point is the greedy text). "
        "Each column of the window, read with the guess it produces, is an N-gram the target itself wrote; these "
        "go into a pool keyed by their first character, and the next round verifies the pool's n-grams that start "
        "with the last character, as one tree. The window rides in the same pass but nothing verified attends to "
        "it, so the output is exact; the price is a longer pass every round."
    )
    tree = True
    panels = ("lookahead window",)
    deterministic = True
    stateful = True  # the window and the pool belong to one generation
    # Its draft is nearly free (a dict look-up); its cost is the window riding in every drafting round's
    # verify pass: E = (N - 1) W - 1 extra rows whatever K is (verify_extra, set in __init__), which
    # adaptive K counts in v(N) (measured here: a round of W = 5, N = 4, G = 5, K = 4 has ~25 rows and a
    # verify phase 2.8-3.0x the baseline's one-token pass). It used to be spread over a full candidate
    # tree as a cost per drafted token; a round with one candidate was then priced at v(2) instead of
    # v(16), and adaptive K drafted at a loss: 0.94x at T = 0 and 0.8 (5 presets).
    draft_cost = 0.02
    # A call also lays out the window (Extra), but adaptive K prices a call only to space out its idle
    # rounds' shadows (Drafter.call_cost), and a shadow lays out none (shadow): no call cost.

    @classmethod
    def build(cls, src):
        s = src.settings
        return cls(src.prompt, src.checkpoint.config.block_size, s.lookahead_window, s.lookahead_ngram,
                   s.lookahead_candidates, window_alone=not s.k_auto)  # fmt: skip

    def __init__(self, prompt: list[int], block_size: int, window: int = 5, ngram: int = 4, candidates: int = 5,
                 window_alone: bool = True):  # fmt: skip
        """``window_alone``: run the window in a round with no candidates too (LADE: every step).
        Adaptive K turns it off: it chose K > 0 to verify a draft, and a window alone (~15 rows) costs
        a wide pass that emits one token (~3x a plain round's), which its model does not price."""
        if not (1 <= window <= 32 and 2 <= ngram <= 8 and 1 <= candidates <= 32):
            raise ValueError("lookahead needs 1 <= W <= 32, 2 <= N <= 8 and 1 <= G <= 32")
        self.W, self.N, self.G = window, ngram, candidates
        self.window_alone = window_alone
        self.block_size = block_size
        self.prompt = list(prompt)
        self.pool = NGramPool(ngram, candidates)
        for s in range(len(prompt) - ngram + 1):  # LADE's POOL_FROM_PROMPT
            self.pool.add(tuple(prompt[s : s + ngram]), "prompt")
        self.levels: list[list[int]] | None = None  # (N - 1, W): made from the run's generator in round 1
        self.cols = 0  # window columns in this round's pass
        self.row: dict[tuple[int, int], int] = {}  # cell -> its extra row, this round
        self.preds: list[int] = []  # the top level's predictions, per column run this round
        self.verify_extra = (ngram - 1) * window - 1  # the window's cells but the root (window_layout)
        # Each candidate adds at most one node per level and is N - 1 tokens long. Priced as a chain
        # before its first draft, a round sent ~15 nodes where adaptive K expected K, with the window's
        # 14 rows: ~2.6x a plain round's time for ~1.3 tokens, once per run (the bench's 11 presets at
        # T = 0.8); priced at its width it waits for evidence of more.
        self.nodes_per_level, self.max_depth = float(candidates), ngram - 1

    def top_cell_rows(self) -> list[int]:
        """Row of the observed logits (root first, then the extras) that predicts for each column."""
        top = self.N - 2
        return [0 if (top, c) == (0, 0) else 1 + self.row[(top, c)] for c in range(self.cols)]

    @torch.no_grad()
    def draft(self, context, k, temperature, gen):
        if self.levels is None:  # tokens drawn from the prompt (LADE's initialisation)
            pick = torch.randint(len(self.prompt), (self.N - 1, self.W), generator=gen).tolist()
            self.levels = [[self.prompt[i] for i in row] for row in pick]
        root = context[-1]
        grams = self.pool.candidates(root) if k > 0 else []
        tokens, parents, origin = ngram_tree(grams, k)
        # Column i reaches offset i + N - 2; every position must stay in the context window.
        self.cols = max(0, min(self.W, room(len(context), self.block_size) - (self.N - 2) + 1))
        if not tokens and not self.window_alone:
            self.cols = 0
        extra, self.row = window_extra(self.levels, self.cols, len(tokens))
        self.preds = []
        levels = [list(row) for row in self.levels]
        levels[0][0] = root
        notes = {
            "window": levels,  # (N - 1, W): level j, column i guesses offset j + i
            "columns_run": self.cols,
            "candidates": [{"ngram": [root, *g], "source": self.pool.source.get((root, *g), "jacobi")} for g in grams],
            "node_candidate": origin,  # per draft node, the candidate it came from
            "pool_size": len(self.pool),
            "pool_keys": len(self.pool.grams),
            "W": self.W, "N": self.N, "G": self.G,
        }  # fmt: skip
        return Draft(tokens, parents, None, notes, extra=extra if extra.tokens else None)

    def shadow(self, context, temperature, gen):
        """The candidates' first tokens, as draft(context, 1) proposes them, without the window: adaptive K
        scores a shadow and never verifies it, so no window rides along, and none is laid out (that cost a
        shadow round a median 57 us against a ~1210 us idle round; 11 presets, T = 0.8, 1 thread).
        The window stays as it is and moves on in update, as in any idle round."""
        firsts = list(dict.fromkeys(g[0] for g in self.pool.grams.get(context[-1], ())))
        return Draft(firsts, [-1] * len(firsts), None, {})

    def observe(self, logits: torch.Tensor) -> None:
        self.preds = logits[self.top_cell_rows()].argmax(-1).tolist()  # the greedy token, at any T

    def advance(self, e: int) -> None:
        """Move the window on by e tokens (e = 0: a Jacobi step in place, for tests): the new cell
        (j, i) takes the old level j + 1's guess at column i + e - 1 (the top level: the new
        prediction). Cells with no source keep their guess or repeat their left neighbour."""
        old, preds, W, top = self.levels, self.preds, self.W, self.N - 2
        new = []
        for j in range(top + 1):
            # the source of the new level j: level j + 1, or for the top level the new predictions
            src = old[j + 1] if j < top else preds[:W] + old[top][len(preds) :]
            row = ([old[j][0]] + src[: W - 1]) if e == 0 else src[e - 1 :]  # cell i takes src[i + e - 1]
            # past the source's end, repeat the left neighbour (0 if there is none: e > W)
            new.append(row + [row[-1] if row else 0] * (W - len(row)))
        self.levels = new

    def settled(self) -> bool:
        """Whether every level holds the top level's guesses: then advance(1) with no new
        predictions changes nothing (each level takes the one above, the top keeps its own)."""
        top = self.levels[-1]
        return all(row == top for row in self.levels[:-1])

    def collect(self, root: int) -> list[tuple[int, ...]]:
        """The n-gram each column run this round wrote: its chain, upwards, and its prediction."""
        out = []
        for c, pred in enumerate(self.preds):
            chain = [root if c == 0 else self.levels[0][c]] + [self.levels[j][c] for j in range(1, self.N - 1)]
            out.append((*chain, pred))
        return out

    def update(self, context, emitted, p):
        if not self.preds and (self.levels is None or len(emitted) == 1 and self.settled()):
            # An idle round (adaptive K's K = 0): no column ran, and either no window was laid out yet
            # or a one-token shift of a window whose levels all agree leaves it as it is (advance's rule).
            return {}  # nothing changed: no notes (a dict of them cost ~1 us in each idle round)
        grams = self.collect(context[-1])
        new = [g for g in grams if self.pool.add(g, "jacobi")]
        self.advance(len(emitted))
        self.preds = []
        return {"collected": [list(g) for g in grams], "new": len(new), "shift": len(emitted),
                "pool_size": len(self.pool)}  # fmt: skip
