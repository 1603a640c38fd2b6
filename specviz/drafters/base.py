"""The drafter interface: every drafter proposes, for the current context, either

- a chain of tokens, each sampled from a distribution q it returns (``q`` rows), or
- a chain or tree of tokens chosen deterministically (``q is None``: one-hot proposals).

A tree is given depth first: ``parents[i]`` is the index of node i's parent, -1 for a child of
the root (the root is the last token of the context, already generated). A chain is the tree
with parents [-1, 0, 1, ...]. Siblings are distinct tokens, except in a tree sampled with
replacement (``sampling``), where two children may repeat a token. ``notes`` holds what a teacher
wants to see about how the draft was made; it must be JSON-serialisable (plain lists, dicts,
ints, floats, strings).
"""

import heapq
from dataclasses import dataclass, field

import torch

from specviz.core.sampling import draw, scale_probs


@dataclass
class Extra:
    """Tokens a drafter asks the verify pass to run besides its candidates (lookahead decoding's
    Jacobi window): never verified, never kept in the KV cache, their logits handed back to the
    drafter (``Drafter.observe``). ``offsets``: each token's position relative to the root (>= 1);
    ``mask`` (E, 1 + N + E) bool over [root + draft nodes + extras], True = may attend. The engine
    hides the extras from the root and the draft nodes, so verification sees exactly what it would
    see without them."""

    tokens: list[int]
    offsets: list[int]
    mask: torch.Tensor  # (E, 1 + N + E) bool


@dataclass
class Draft:
    tokens: list[int]  # the candidates; for a tree, its depth-first flattening
    parents: list[int]  # parent index per token, -1 = child of the root
    q: torch.Tensor | None = None  # (N, V) distribution each token was sampled from; None = one-hot
    notes: dict = field(default_factory=dict)
    # A tree of sampled tokens: how each node's children were drawn from its q,
    # "with-replacement" or "without-replacement" (specviz/verifiers/multidraft.py); None otherwise.
    sampling: str | None = None
    extra: Extra | None = None  # tokens for the verify pass that are not candidates (see Extra)

    @property
    def depths(self) -> list[int]:
        """Depth of each node, 1 for children of the root."""
        d: list[int] = []
        for p in self.parents:
            d.append(1 if p == -1 else d[p] + 1)
        return d

    @property
    def is_chain(self) -> bool:
        return self.parents == list(range(-1, len(self.tokens) - 1))


def tree_mask(parents: list[int]) -> torch.Tensor:
    """Tree attention mask for a depth-first tree: index 0 is the root (last context token), i + 1
    is node i. mask[i, j] is True iff j is i or one of its ancestors. -> (N+1, N+1) bool"""
    n = len(parents) + 1
    rows = [bytes([1]) + bytes(n - 1)]  # the root sees itself; everyone sees the root
    for i, p in enumerate(parents):
        assert p < i, "parents must come before children"
        row = bytearray(rows[p + 1])  # the parent's row already holds all its ancestors
        row[i + 1] = 1
        rows.append(row)
    # One tensor over the bytes, built in Python: ~4 us for 16 nodes, where a row-by-row |= on the
    # tensor took ~40 us, in every tree round's verify phase. (The tensor keeps the buffer alive.)
    return torch.frombuffer(bytearray(b"".join(rows)), dtype=torch.bool).view(n, n)  # (N+1, N+1)


def depth_first(paths: list[tuple[int, ...]]) -> tuple[list[int], list[int]]:
    """Flatten a tree whose nodes are named by their paths of sibling ranks ((0,), (0, 2), ...; any
    order, every parent present) depth first, siblings by rank, as tree attention and the tree view
    expect. -> (order, parents): order[i] is the node placed at i, parents[i] its parent's new index."""
    order = sorted(range(len(paths)), key=paths.__getitem__)
    index = {paths[old]: new for new, old in enumerate(order)}
    return order, [index.get(paths[i][:-1], -1) for i in order]  # the root's path () is not a node: -1


def chain(tokens: list[int], q: torch.Tensor | None = None, notes: dict | None = None) -> Draft:
    return Draft(list(tokens), list(range(-1, len(tokens) - 1)), q, notes or {})


@dataclass
class Sources:
    """What a drafter is built from, for one generation (Drafter.build)."""

    settings: object  # specviz.core.settings.Settings: the drafter's knobs
    checkpoint: object  # the target's Checkpoint: n-gram counts, config, tokenizer, where its artifacts live
    prompt: list[int]  # the prompt's token ids
    target: object = None  # the generation's target with its KV cache (TargetModel): heads and layer-skip read it
    draft_model: object = None  # the tiny draft GPT, for a drafter that needs "draft_model"

    def need(self, what: str, who: str):
        """The source ``what`` ("target" or "draft_model"), or a ValueError naming the drafter ``who``."""
        value = getattr(self, what)
        if value is None:
            raise ValueError(f"the {who} drafter needs the {what.replace('_', ' ')}")
        return value


class Drafter:
    """Base class. A drafter is made for one generation (it may keep state across rounds:
    NASD's storage, the neural draft model's KV cache) and is told the outcome of each round.

    ``draft(context, k, temperature, gen)``: context is every token so far (prompt and
    generated); propose at most ``k`` tokens deep (fewer, or none, is allowed). Sampling must
    use ``gen`` and the helpers in specviz.core.sampling, so that a seed reproduces a run.

    ``observe(logits)``: only for a draft that carried ``extra`` tokens (see Extra).

    ``update(context, emitted, p)``: after verification. ``context`` is the context the
    draft was made for, ``emitted`` the tokens the round appended, ``p`` the (len(emitted), V)
    target distributions (at the run's temperature) that predicted each emitted token. Returns
    JSON-serialisable notes on what changed (or {}).
    """

    # What the method is, declared on its class: the registry (specviz/drafters/__init__.py), the engine,
    # the CLI, the atlas and the app read these, and none of them names a drafter.
    name = "base"  # the registry's key: --drafter, the app's choice, the bench's rows
    summary = ""  # where the draft comes from, in one line (the atlas)
    paper = ""  # the paper or post it follows, by name (the atlas, the glossary)
    preset = "Dialogue"  # the preset where it shows best (the atlas and the tree page open it there)
    glossary = ""  # a paragraph for the lesson's glossary ("" : none)
    drafts = True  # False only for plain decoding, the baseline every figure is measured against
    featured = False  # Home's race opens with it: the fastest lossless drafter in the stored bench run
    under_load = False  # the batch bench times it at every batch size (specviz/bench/batch.py)
    tree = False  # sends trees, so chains-only verifiers refuse it
    sampled_tree = False  # sends trees of sampled tokens: the tree_sampling knob applies
    shaped = False  # its tree's shape may be Sequoia's instead of grown (the tree_shape knob; adaptive/sequoia.py)
    needs: frozenset[str] = frozenset()  # besides the target: "draft_model", "target_cache", "corpus", "heads"
    panels: tuple[str, ...] = ()  # the step page's panels for its rounds, by name (ui/method_views.py PANELS)
    deterministic = False  # True: proposals are one-hot (q is None)
    stateful = False  # True: learns during a generation, so one instance serves one generation only
    # True: drafts on a real model's word-piece tokens too (specviz/llm: 50k-entry vocabularies); False: its
    # tables, heads or index are the character model's, and a run on a real model is refused in one line.
    bpe = False
    # Time to draft one token, in target forward passes; adaptive K weighs it (specviz/adaptive/policy.py).
    # Table look-ups cost ~0.02 on this project's CPU; a neural draft's forward pass costs more.
    draft_cost = 0.02
    # Time per depth level drafted, whatever the level's width, in target forward passes: a drafter that runs
    # something once a level (Medusa: one head a level). Adaptive K adds K times this to a round's cost.
    level_cost = 0.0
    # Time of one draft call beyond draft_cost per token, in target forward passes (an index rebuilt per
    # call, say). Adaptive K's idle rounds consult a costly-to-call drafter more rarely.
    call_cost = 0.0
    # Tokens every drafting round adds to the verify pass besides its draft (Draft.extra: lookahead's
    # window); adaptive K counts them in v(N). Idle rounds send none.
    verify_extra = 0
    # Drafted tokens per depth level that adaptive K prices a draft at before it has seen one: 1 for a
    # chain; a tree drafter whose width its knobs fix says so, or its first draft is priced as a chain.
    nodes_per_level = 1.0
    # The deepest draft this drafter can make whatever K is (None: K itself); adaptive K weighs no deeper K.
    max_depth: int | None = None
    # The most tokens one draft can hold whatever K is (a tree's node budget; 0: no cap). Adaptive K learns
    # drafted tokens per level at the depths it drafted, and a budgeted tree spreads the same budget over
    # however many levels K gives it: priced K x per level, a deeper K would cost more nodes than it sends
    # (the distilled tree, 16 nodes over 3 levels: a K = 4 draft priced at 21 nodes, not 16).
    max_nodes = 0

    @classmethod
    def build(cls, src: Sources) -> "Drafter":
        """A drafter for one generation, from its settings and sources."""
        return cls()

    @classmethod
    def check(cls, settings, config) -> None:
        """Raise ValueError with a user-facing sentence where the settings cannot fit the target's config
        (its GPTConfig), before any weights load."""

    @classmethod
    def load(cls, settings, checkpoint) -> None:
        """Load and check the artifacts it needs (a head, a table) for this target Checkpoint, so that a
        bad file is reported before a run starts; raises the artifact's own error."""

    @classmethod
    def peer(cls, k: int) -> dict | None:
        """transformers' generate() arguments for the same method at draft length k (the bench compares
        against it), or None where transformers has none."""
        return None

    def draft(self, context: list[int], k: int, temperature: float, gen: torch.Generator) -> Draft:
        raise NotImplementedError

    def estimates(self, temperature: float) -> bool:
        """Whether draft_until can say, before drawing each token, the chance that it is accepted (at this
        temperature). Adaptive K then stops the draft token by token (specviz/adaptive/stopper.py, Stopper)."""
        return False

    def draft_until(self, context: list[int], k: int, temperature: float, gen: torch.Generator, go_on) -> Draft:
        """draft, but before drawing each token ask ``go_on(chance that it is accepted)``, and stop at the
        first no. The chance may depend only on the tokens drawn before it (the draft's length must be
        a stopping time). Only for a drafter whose estimates() says yes."""
        raise NotImplementedError

    def shadow(self, context: list[int], temperature: float, gen: torch.Generator) -> Draft:
        """A one-level draft that adaptive K scores in an idle round and never verifies (Generation.step):
        the usual draft at K = 1, unless the drafter prepares more than its tokens for a verify pass."""
        return self.draft(context, 1, temperature, gen)

    def update(self, context: list[int], emitted: list[int], p: torch.Tensor) -> dict:
        return {}

    def observe(self, logits: torch.Tensor) -> None:
        """After the verify pass of a draft with ``extra``, before ``update``: the logits of the
        root, then of each extra token, (1 + E, V). Only drafters that send extras need it."""


def model_cache(model):
    """A draft model with a KV cache of its own: CachedModel for the character GPT, HFTarget for a transformers
    model (specviz/llm/target.py). Both trim, feed, extend and keep the same way."""
    from models.gpt import GPT

    if isinstance(model, GPT):
        from specviz.kernels.cached_model import CachedModel

        return CachedModel(model)
    from specviz.llm.target import HFTarget

    return HFTarget(model)


def sample_chain(next_dist, context: list[int], k: int, temperature: float, gen: torch.Generator) -> Draft:
    """Draft k tokens autoregressively from ``next_dist(seq) -> (probs (V,), note)``.

    The q returned for each token is exactly the (temperature-scaled) distribution it was
    drawn from; returning anything else would break the accept/reject math."""
    seq, tokens, qs, notes = list(context), [], [], []
    for _ in range(k):
        probs, note = next_dist(seq)
        q = scale_probs(probs, temperature)  # (V,)
        x = draw(q, gen)
        tokens.append(x)
        qs.append(q)
        notes.append(note)
        seq.append(x)
    q = torch.stack(qs) if qs else None  # (k, V)
    return Draft(tokens, list(range(-1, k - 1)), q, {"positions": notes})


def grow_tree(children, root, k: int, max_nodes: int, min_score: float = 0.0) -> tuple[list[int], list[int], list]:
    """A deterministic draft tree grown best first: ``children(state) -> [(token, score, state)]``
    lists a node's children ranked (best first), each with its score, which never exceeds its
    parent's (a path probability). Keep the highest-scoring nodes, at least ``min_score``, at most
    ``k`` deep and ``max_nodes`` in all (ties: the earlier in depth-first order), and flatten them
    depth first, siblings by rank, as tree attention and the tree view expect.
    -> (tokens, parents, [(depth, score, state)] per node)"""
    # Heap entries: (-score, rank path, token, state). A child's score never exceeds its parent's
    # and its rank path sorts after it, so a parent always pops first.
    heap = [(-s, (r,), t, st) for r, (t, s, st) in enumerate(children(root))] if k > 0 else []
    heapq.heapify(heap)
    kept = []  # (rank path, token, score, state)
    while heap and len(kept) < max_nodes and -heap[0][0] >= min_score:
        neg, ranks, tok, state = heapq.heappop(heap)
        kept.append((ranks, tok, -neg, state))
        if len(ranks) < k:
            for r, (t, s, st) in enumerate(children(state)):
                heapq.heappush(heap, (-s, ranks + (r,), t, st))
    order, parents = depth_first([ranks for ranks, *_ in kept])
    return [kept[i][1] for i in order], parents, [(len(kept[i][0]), kept[i][2], kept[i][3]) for i in order]
