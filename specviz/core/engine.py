"""The step-through engine: one call of ``Generation.step()`` is one speculative round.

    draft   the drafter proposes a chain or tree from the context
    verify  one target forward pass over [last token + draft] (tree attention for trees), plus any
            extra tokens the drafter asked for (Draft.extra: lookahead's window), unseen by the draft
    accept  accept/reject each drafted token; correction from the residual or bonus token
    trim    the target's cache keeps the last token and the accepted path, nothing else

Every round returns a RoundRecord. ``Session`` keeps them so the app can go back and forth
without recomputing.
"""

import threading
import time
from dataclasses import asdict, dataclass

import torch

from models.checkpoint import Checkpoint
from models.distilled import MAX_CONTEXT
from specviz.adaptive.costs import REFERENCE, CostCurve
from specviz.adaptive.policy import AdaptiveK
from specviz.core.markup import cut
from specviz.core.record import RoundRecord, Trace
from specviz.core.sampling import Stream, probs_from_logits
from specviz.core.target import TargetModel, room, window_start
from specviz.drafters import DRAFTERS, SAMPLED_TREE_DRAFTERS, TREE_DRAFTERS, Drafter, make_drafter
from specviz.drafters.base import Draft, chain, tree_mask
from specviz.kernels.cached_model import CachedModel
from specviz.verifiers import SAMPLINGS, VARIANTS, expected_acceptance, get_verifier

TEMPERATURE_MIN, TEMPERATURE_MAX = 0.01, 10.0  # besides 0 (greedy); see Settings.check
SEED_MAX = 2**63 - 1
IDLE = "chose K = 0: the drafter was not asked"
STOPPED_AT_ONCE = "K = 0: the first token's chance of acceptance did not pay for a draft"
IDLE_FOR_GOOD = ("chose K = 0, as it will every round (too costly to shadow, so nothing new is learnt): "
                 "the drafter is neither asked nor updated, and the target keeps no features for it")  # fmt: skip


@dataclass(frozen=True)  # a value: hashable, so it keys caches and runs as it is
class Settings:
    drafter: str = "trigram"
    k: int = 4  # the draft depth K; with k_auto, the largest K adaptive K may choose
    k_auto: bool = False  # choose K each round from past acceptance and cost (specviz.adaptive.policy)
    temperature: float = 0.8
    max_new_tokens: int = 200
    seed: int = 0
    verification: str = "lossless"  # a name in specviz.verifiers.VERIFIERS (nasd-seed: seed 004's biased rule)
    tree_sampling: str = "without-replacement"  # how a sampled tree's children are drawn (multidraft.py)
    min_context_count: int = 2  # trigram
    trie_n: int = 13
    trie_prefix_len: int = 3
    trie_num_draft: int = 16
    nasd_n: int = 3
    nasd_filler_top_k: int = 1
    nasd_stop_if_unknown: bool = True
    lookup_max_ngram: int = 3
    lookup_min_ngram: int = 1
    distilled_context: int = 8  # L: longest context the distilled drafters look up
    distilled_nodes: int = 16  # node budget of the distilled tree
    suffix_max_match: int = 16  # suffix: longest context suffix matched in the indices
    suffix_min_prob: float = 0.1  # suffix: grow the tree while a path's empirical probability is at least this
    suffix_max_nodes: int = 16  # suffix: node budget of the candidate tree
    layer_skip_layers: int = 2  # layer-skip: the target's first n layers draft (1 .. n_layer - 1; the target has 4)
    neural_tree_nodes: int = 16  # node budget of the neural draft tree
    neural_tree_children: int = 3  # the most children per node of the neural draft tree
    lookahead_window: int = 5  # lookahead: W, the Jacobi window's columns
    lookahead_ngram: int = 4  # lookahead: N, the n-gram size (N - 1 levels in the window)
    lookahead_candidates: int = 5  # lookahead: G, n-grams kept per first token and verified per round
    medusa_nodes: int = 16  # medusa: node budget of the candidate tree (Medusa's sparse tree)
    medusa_top_k: int = 3  # medusa: candidates per head (the tokens of head i at depth i)
    eagle_ttt: bool = True  # eagle3, eagle3-tree: the head trained with training-time test (False: without)
    eagle_tree_nodes: int = 16  # node budget of the EAGLE-3 draft tree
    eagle_tree_children: int = 3  # the most children per node of the EAGLE-3 draft tree

    def check(self) -> None:
        """Raise ValueError with a user-facing sentence for settings out of range.

        Temperature is 0 (greedy) or in [TEMPERATURE_MIN, TEMPERATURE_MAX]: below 0.01 the
        logits / T overflow (1e-320 is subnormal), above 10 every row is nearly uniform, and inf
        or nan mean nothing. Seeds are 0 .. 2^63 - 1 (torch's generator takes 64 bits; the
        exactness harness adds up to a million to a seed)."""
        if self.drafter not in DRAFTERS:
            raise ValueError(f"unknown drafter {cut(self.drafter)}; choose one of: {', '.join(DRAFTERS)}")
        if self.verification not in VARIANTS:
            raise ValueError(f"unknown verification {cut(self.verification)}; choose one of: {', '.join(VARIANTS)}")
        if not get_verifier(self.verification).trees and self.drafter in TREE_DRAFTERS:
            raise ValueError(
                f"{self.verification} verification checks chains only; the {self.drafter} drafter sends trees"
            )
        if self.tree_sampling not in SAMPLINGS:
            raise ValueError(f"unknown tree sampling {cut(self.tree_sampling)}; choose one of: {', '.join(SAMPLINGS)}")
        if self.verification == "replacement-mismatch" and (
            self.drafter not in SAMPLED_TREE_DRAFTERS or self.tree_sampling != "without-replacement"
        ):
            raise ValueError("replacement-mismatch verification needs a tree sampled without replacement "
                             f"(drafter {' or '.join(SAMPLED_TREE_DRAFTERS) or 'none yet'}, tree sampling without-replacement)")  # fmt: skip
        if not 1 <= self.k <= 32:
            raise ValueError(f"K must be between 1 and 32, got {self.k}")
        if not (self.temperature == 0 or TEMPERATURE_MIN <= self.temperature <= TEMPERATURE_MAX):
            raise ValueError(f"temperature must be 0 (greedy) or between {TEMPERATURE_MIN} and {TEMPERATURE_MAX}, "
                             f"got {cut(self.temperature)}")  # fmt: skip
        if not 1 <= self.max_new_tokens <= 4096:
            raise ValueError(f"max new tokens must be between 1 and 4096, got {self.max_new_tokens}")
        if not 0 <= self.seed <= SEED_MAX:
            raise ValueError(f"the seed must be between 0 and 2^63 - 1, got {cut(self.seed)}")
        if not 0 <= self.min_context_count <= 1_000_000:
            raise ValueError("min_context_count must be between 0 and 1000000")
        if not (1 <= self.trie_prefix_len < self.trie_n <= 64 and 1 <= self.trie_num_draft <= 1024):
            raise ValueError("trie needs 1 <= L_p < n <= 64 and 1 <= num_draft <= 1024")
        if not (2 <= self.nasd_n <= 32 and 1 <= self.nasd_filler_top_k <= 64):
            raise ValueError("NASD needs 2 <= n <= 32 and 1 <= filler_top_k <= 64")
        if not 1 <= self.lookup_min_ngram <= self.lookup_max_ngram <= 64:
            raise ValueError("prompt lookup needs 1 <= min ngram <= max ngram <= 64")
        if not 0 <= self.distilled_context <= MAX_CONTEXT or not 1 <= self.distilled_nodes <= 64:
            raise ValueError(f"the distilled drafters need 0 <= L <= {MAX_CONTEXT} and 1 <= nodes <= 64")
        if not 1 <= self.suffix_max_match <= 64 or not 1 <= self.suffix_max_nodes <= 64:
            raise ValueError("suffix decoding needs 1 <= max match <= 64 and 1 <= max nodes <= 64")
        if not 0 <= self.suffix_min_prob <= 1:  # not (a <= x <= b) is also True for nan
            raise ValueError(
                f"suffix decoding's min probability must be between 0 and 1, got {cut(self.suffix_min_prob)}"
            )
        if not 1 <= self.layer_skip_layers <= 63:  # the model's own bound (< n_layer) is checked by the drafter
            raise ValueError(f"layer-skip drafts with 1 to n_layer - 1 layers, got {self.layer_skip_layers}")
        if not 1 <= self.neural_tree_nodes <= 64:
            raise ValueError(
                f"the neural tree's node budget must be between 1 and 64, got {cut(self.neural_tree_nodes)}"
            )
        if not 1 <= self.neural_tree_children <= 8:
            raise ValueError(f"the neural tree's children per node must be between 1 and 8, "
                             f"got {cut(self.neural_tree_children)}")  # fmt: skip
        if not 1 <= self.medusa_nodes <= 64 or not 1 <= self.medusa_top_k <= 8:
            raise ValueError(f"medusa needs 1 <= nodes <= 64 and 1 <= top_k <= 8, "
                             f"got {cut(self.medusa_nodes)} and {cut(self.medusa_top_k)}")  # fmt: skip
        if not (1 <= self.lookahead_window <= 32 and 2 <= self.lookahead_ngram <= 8
                and 1 <= self.lookahead_candidates <= 32):  # fmt: skip
            raise ValueError("lookahead needs 1 <= window W <= 32, 2 <= n-gram N <= 8 and 1 <= candidates G <= 32")

        if not 1 <= self.eagle_tree_nodes <= 64 or not 1 <= self.eagle_tree_children <= 8:
            raise ValueError(f"the EAGLE tree needs 1..64 nodes and 1..8 children per node, got "
                             f"{cut(self.eagle_tree_nodes)} and {cut(self.eagle_tree_children)}")  # fmt: skip


def verify_pass(target: TargetModel, root: int, draft: Draft, prefix: list[int] = ()):
    """The round's one target forward: the context tokens the cache lacks (``prefix``: a prefill
    round's, else none), then [root + draft nodes] (tree attention for a tree), then the draft's extra
    tokens if it has any (Draft.extra: lookahead's Jacobi window). The prefix is causal and every
    later row sees all of it; the root and the nodes never attend to an extra, so their rows are what
    they would be without them, and (the kernels' rows never depend on the rows beside them) what
    they would be after a separate prefill. Extras are scratch that keep() never commits.
    -> (logits (N+1, V) of root and nodes, logits (1+E, V) of the root and the extras or None,
    positions of root, nodes and extras, the tree mask (N+1, N+1) or None for a chain)"""
    M = len(prefix)
    P, n = target.length + M, 1 + len(draft.tokens)
    tree = None if draft.is_chain else tree_mask(draft.parents)  # (N+1, N+1) over [root + nodes]
    tokens, positions, mask = [root] + draft.tokens, [P] + [P + d for d in draft.depths], tree
    extra = draft.extra
    if extra is not None and extra.tokens:
        E = len(extra.tokens)
        mask = torch.zeros(n + E, n + E, dtype=torch.bool)  # root and nodes: never an extra
        mask[:n, :n] = tree if tree is not None else torch.ones(n, n, dtype=torch.bool).tril()
        mask[n:] = extra.mask  # (E, n + E), the drafter's own pattern
        tokens, positions = tokens + extra.tokens, positions + [P + o for o in extra.offsets]
    if M and mask is not None:  # the prefix: causal among itself, seen by every row after it
        T = M + len(tokens)
        full = torch.ones(T, T, dtype=torch.bool).tril()  # (M+T', M+T')
        full[M:, M:] = mask
        mask = full
    logits = target.forward([*prefix, *tokens], [*range(P - M, P), *positions], mask)[M:]  # (N+1+E, V)
    if extra is None or not extra.tokens:
        return logits, None, positions, tree
    return logits[:n], logits[[0, *range(n, len(tokens))]], positions, tree


class Generation:
    """One speculative generation from a prompt. step() is not thread-safe: sessions that share a
    generation call it holding ``lock`` (see Session)."""

    def __init__(self, target: Checkpoint, prompt: list[int], settings: Settings, draft_model=None, drafter=None,
                 costs: CostCurve = REFERENCE):  # fmt: skip
        """``drafter``: reuse a drafter made for these settings (only one that is not stateful).
        ``costs``: what a verify pass costs on this machine, for adaptive K (specviz/adaptive/costs.py)."""
        settings.check()
        if not prompt:
            raise ValueError("the prompt is empty")
        self.settings = settings
        self.target: TargetModel = CachedModel(target.model)
        assert drafter is None or not drafter.stateful
        self.drafter: Drafter = drafter or make_drafter(
            settings.drafter, settings, target, prompt, draft_model, self.target
        )
        self.verifier = get_verifier(settings.verification)
        d = self.drafter
        self.adaptive = None
        if settings.k_auto:  # no deeper than the drafter can draft: E(K) would count levels it never sends
            k_max = min(settings.k, d.max_depth or settings.k)
            self.adaptive = AdaptiveK(k_max, d.draft_cost, d.call_cost, d.verify_extra, d.nodes_per_level, costs,
                                      d.max_nodes, d.level_cost)  # fmt: skip
        # A drafter adaptive K will never consult costs nothing beyond plain decoding: no features
        # captured for a draft head (EAGLE, Medusa), no updates. Decided before the first forward.
        self.never_drafts = self.adaptive is not None and self.adaptive.never_drafts()
        # A drafter that weighs each token before drawing it is stopped token by token (adaptive.Stopper).
        self.stops = (
            self.adaptive is not None and not self.never_drafts and self.drafter.estimates(settings.temperature)
        )
        if self.never_drafts:
            self.target.capture(())
        self.gen = Stream().manual_seed(settings.seed)
        self.tokens = list(prompt)
        self.trace = Trace(asdict(settings), target.tokenizer.pieces, list(prompt))
        self.lock = threading.Lock()

    @property
    def generated(self) -> int:
        return len(self.tokens) - len(self.trace.prompt)

    @property
    def done(self) -> bool:
        return self.generated >= self.settings.max_new_tokens

    @property
    def draft_limit(self) -> int:
        """The next round's K: never overshoot max_new_tokens, never let a round span a window jump."""
        s = self.settings
        return min(s.k, s.max_new_tokens - self.generated - 1, room(len(self.tokens), self.target.block_size))

    def step(self) -> RoundRecord:
        if self.done:
            raise RuntimeError("the generation is complete")
        s, T = self.settings, self.settings.temperature
        B = self.target.block_size
        L = len(self.tokens)
        k = self.draft_limit

        t0 = time.perf_counter()
        choice = shadow = None
        if self.stops:  # adaptive K, token by token: the drafter weighs each token before drawing it
            stopper = self.adaptive.stopper(k)
            draft = self.drafter.draft_until(self.tokens, k, T, self.gen, stopper)
            choice = stopper.result()
            k = choice.k
            if not k:  # asked and stopped at once; or no room for a draft this round (the drafter was not asked)
                draft.notes["adaptive K"] = STOPPED_AT_ONCE if choice.estimates else IDLE
        else:
            if self.adaptive is not None:
                choice = self.adaptive.choose(k)
                if choice.k == 0 and k >= 1 and not self.never_drafts and self.adaptive.idle_round():
                    shadow = self.drafter.shadow(self.tokens, T, self.gen)  # scored below, never verified
                k = choice.k
            if k == 0 and choice is not None:  # adaptive K chose plain decoding: cost nothing beyond it
                draft = chain([], notes={"adaptive K": IDLE_FOR_GOOD if self.never_drafts else IDLE})
            else:
                draft = self.drafter.draft(self.tokens, k, T, self.gen)  # k = 0 too: its notes say why nothing
        depths = draft.depths
        if depths and max(depths) > k:
            raise RuntimeError(f"drafter {s.drafter} proposed {max(depths)} deep, above the limit {k}")

        t1 = time.perf_counter()
        reprefill, prefix = self.target.trim_missing(self.tokens)  # a prefill round's context: in the same pass
        kv_before = self.target.length + len(prefix)
        logits, extra_logits, positions, tree = verify_pass(self.target, self.tokens[-1], draft, prefix)
        if extra_logits is not None:
            self.drafter.observe(extra_logits)
        p_rows = probs_from_logits(logits, T)  # (N+1, V)

        t2 = time.perf_counter()
        verdict = self.verifier.verify(draft, p_rows, T, self.gen)
        path = verdict.path
        M = len(prefix)  # the pass's inputs: prefix, root, nodes
        self.target.keep(
            [*range(M + 1)] + [M + 1 + i for i in path], [*prefix, self.tokens[-1]] + [draft.tokens[i] for i in path]
        )
        emitted = verdict.emitted(draft)
        # Row i of emitted_p predicted emitted[i]: the root's row, then each accepted node's.
        n = len(path)  # a chain's path is a prefix of its nodes: a view, not a gather (~25 us a round)
        emitted_p = p_rows[: n + 1] if path == list(range(n)) else p_rows[[0] + [i + 1 for i in path]]
        update = {} if self.never_drafts else self.drafter.update(self.tokens, emitted, emitted_p)
        self.tokens += emitted
        if self.adaptive is not None and not self.never_drafts:  # never_drafts: nothing left to learn
            if k:  # a round that chose to draft (an idle round was counted as it chose: idle_round)
                self.adaptive.update(k, len(draft.tokens), max(depths, default=0), len(path))
            if shadow is not None and shadow.tokens:
                self.adaptive.observe(expected_acceptance(shadow, p_rows[0]))
        record = RoundRecord(
            index=len(self.trace.rounds),
            context_len=L,
            window_start=window_start(L, B),
            reprefill=reprefill,
            kv_before=kv_before,
            kv_after_verify=kv_before + len(positions),
            kv_after_trim=self.target.length,
            kv_kept=[kv_before] + [kv_before + 1 + i for i in path],
            draft_tokens=draft.tokens,
            draft_parents=draft.parents,
            draft_positions=positions[: 1 + len(draft.tokens)],
            tree_mask=None if tree is None else tree.tolist(),
            draft_notes=draft.notes,
            positions=verdict.checks,
            accepted_path=path,
            residual=verdict.residual,
            correction=verdict.correction,
            bonus_p=verdict.bonus_p,
            bonus=verdict.bonus,
            emitted=emitted,
            emitted_kinds=["accepted"] * len(path) + ["correction" if verdict.correction is not None else "bonus"],
            drafter_update=update,
            k_choice=choice,
            verify_notes=verdict.notes,
            draft_sampling=draft.sampling,
            draft_s=t1 - t0,
            verify_s=t2 - t1,
            extra_tokens=draft.extra.tokens if draft.extra else [],
            extra_positions=positions[1 + len(draft.tokens) :],
        )
        record.accept_s = time.perf_counter() - t2  # accept, trim the cache, update the drafter, record
        self.trace.rounds.append(record)
        return record

    def run(self, progress=None) -> Trace:
        while not self.done:
            self.step()
            if progress:
                progress(self.generated)
        return self.trace


class Session:
    """A step-through over one generation: rounds are computed once, then browsed.

    ``cursor`` is the number of rounds shown (0 = only the prompt). ``forward`` computes a new
    round only when the cursor is at the newest one. Several sessions may browse one generation
    (a class following the same preset: see ui/controls.py): each keeps its own cursor, and a
    round is computed once, by whichever session reaches it first, under the generation's lock."""

    def __init__(self, target: Checkpoint, prompt: list[int], settings: Settings, draft_model=None,
                 generation: "Generation | None" = None):  # fmt: skip
        self.generation = generation or Generation(target, prompt, settings, draft_model)
        assert self.generation.settings == settings and self.generation.trace.prompt == list(prompt)
        self.cursor = 0
        self.furthest = 0  # the most rounds this session has shown: its own horizon, whatever others computed

    @property
    def rounds(self) -> list[RoundRecord]:
        return self.generation.trace.rounds

    @property
    def current(self) -> RoundRecord | None:
        return self.rounds[self.cursor - 1] if self.cursor else None

    @property
    def at_end(self) -> bool:
        return self.cursor == len(self.rounds) and self.generation.done

    def forward(self) -> RoundRecord | None:
        if self.cursor == len(self.rounds):
            with self.generation.lock:  # another session may be computing this very round
                if self.cursor == len(self.rounds):
                    if self.generation.done:
                        return self.current
                    self.generation.step()
        self.cursor += 1
        self.furthest = max(self.furthest, self.cursor)
        return self.current

    def back(self) -> RoundRecord | None:
        self.cursor = max(0, self.cursor - 1)
        return self.current

    def seek(self, cursor: int) -> RoundRecord | None:
        """Go to a recorded round (never computes)."""
        self.cursor = max(0, min(cursor, len(self.rounds)))
        return self.current

    def run_to_end(self, progress=None) -> RoundRecord | None:
        with self.generation.lock:
            self.generation.run(progress)
        self.cursor = self.furthest = len(self.rounds)
        return self.current
