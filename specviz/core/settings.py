"""The settings of one run: every knob declared once, here.

Each field carries a ``Knob``: its label, one help sentence, the engine's range, the app's narrower
range where it has one, and the methods it belongs to. ``Settings.check``, the CLI's flags
(specviz/cli/flags.py), the URL's limits (specviz/teaching/query.py), the sidebar's widgets
(ui/controls.py) and each drafter's knob list on the tree page are all generated from these
declarations; nothing writes a knob's range or help again.

``Settings`` is flat, frozen and hashable: it keys the runs a class shares (ui/controls.py).
"""

from collections.abc import Callable
from dataclasses import dataclass, field, fields

from models.distilled import MAX_CONTEXT
from models.mtp import MTPConfig
from specviz.adaptive.sequoia import SHAPES
from specviz.core.markup import cut
from specviz.drafters import BASELINE, drafter_class, drafter_names
from specviz.verifiers import SAMPLINGS, get_verifier, verifier_label, verifier_names
from specviz.verifiers.fly import THETA, WINDOW

SEED_MAX = 2**63 - 1  # torch's generator takes 64 bits; the exactness harness adds up to a million to a seed


@dataclass(frozen=True)
class Knob:
    """What a setting is, for every place that shows, parses or checks it."""

    label: str  # the widget's label; with its method's name, the subject of an error
    help: str  # one sentence: the widget's hover help and the CLI flag's help
    lo: float | None = None  # the engine's range, inclusive (None: a name or a switch, no range)
    hi: float | str | None = None  # a number, or the name of a knob this one may not exceed
    app: tuple | None = None  # the app's and the links' range, where narrower than the engine's
    method: tuple[str, ...] = ()  # the drafters it belongs to (empty: every run)
    trait: str = ""  # or: the drafter trait that makes it matter (tree_sampling: sampled trees)
    verification: tuple[str, ...] = ()  # or: the verification rules it belongs to (shown with them only)
    strict: bool = False  # hi names a knob this one must stay below
    zero: bool = False  # 0 is allowed besides [lo, hi] (temperature: greedy)
    step: float | None = None  # the widget's step
    widget: str = "number"  # "number", "slider", "checkbox" or "select"
    main: bool = False  # in the sidebar's top part (else under its drafter's knobs)
    choices: Callable[[], tuple[str, ...]] | None = None  # a select's options, read when asked (registries)
    option: Callable[[str], str] = str  # a select option's label
    describe: Callable[[str], str] | None = None  # a select option's one line (the widget's help lists them)
    flag: str = ""  # the CLI flag when not --the-name; a switch's flag turns it off when it is on by default
    auto: str = ""  # a switch the CLI sets when this knob's flag says "auto" (K: k_auto)

    def subject(self) -> str:
        """Who an error is about: the label's symbol, after its method ('trie n', 'K')."""
        symbol = self.label.split(" (")[0]
        if symbol[1:2].islower():  # a word, not a symbol: "temperature", but "K", "L_p"
            symbol = symbol[0].lower() + symbol[1:]
        return f"{'/'.join(self.method)} {symbol}" if self.method else symbol

    def limits(self, settings=None) -> tuple | None:
        """The engine's (lo, hi), hi read from ``settings`` where it names another knob."""
        if self.lo is None:
            return None
        hi = getattr(settings or Settings(), self.hi) if isinstance(self.hi, str) else self.hi
        return self.lo, hi

    def app_limits(self) -> tuple | None:
        """The app's (lo, hi): a widget's range and what a link may ask for."""
        if self.app is not None:
            return self.app
        if self.lo is None:
            return None
        return self.lo, KNOBS[self.hi].app_limits()[1] if isinstance(self.hi, str) else self.hi

    def problem(self, value, settings) -> str | None:
        """A user-facing sentence when ``value`` is out of range or not a choice, else None."""
        if self.choices is not None:
            options = self.choices()
            if value not in options:
                return f"unknown {self.label.lower()} {cut(value)}; choose one of: {', '.join(options)}"
            return None
        if self.lo is None:
            return None
        lo, hi = self.limits(settings)
        if self.zero and value == 0:
            return None
        inside = lo <= value < hi if self.strict else lo <= value <= hi  # False for nan
        if inside:
            return None
        zero = "0 or " if self.zero else ""
        bound = f"below {self.hi} ({hi})" if self.strict else f"between {lo} and {hi}"
        if isinstance(self.hi, str) and not self.strict:
            bound = f"between {lo} and {self.hi} ({hi})"
        return f"{self.subject()} must be {zero}{bound}, got {cut(value)}"


def knob(default, label: str, help: str, **kw):
    """A Settings field with its Knob."""
    return field(default=default, metadata={"knob": Knob(label, help, **kw)})


def _n(*method: str) -> dict:
    return {"method": method}


@dataclass(frozen=True)  # a value: hashable, so it keys caches and runs as it is
class Settings:
    # The run: who drafts, how deep, how it is checked, and the sampling.
    drafter: str = knob("trigram", "Drafter", "Who proposes the K characters the target checks in one pass; "
                        f"'{BASELINE}' is plain decoding.", widget="select", main=True, choices=drafter_names,
                        describe=lambda name: drafter_class(name).summary)  # fmt: skip
    k: int = knob(4, "K (draft length)", "Draft length: characters proposed per round (the depth limit for trees); with "
                  "adaptive K, the deepest it may choose.", lo=1, hi=32, app=(1, 16), widget="slider", main=True,
                  auto="k_auto")  # fmt: skip
    k_auto: bool = knob(False, "Adaptive K (at most K)", "Each round picks the K (0 to the slider's K) with the "
                        "most expected characters per unit of time, from past rounds' acceptance and the measured "
                        "cost of a pass; the step page shows why.", widget="checkbox", main=True, flag="-")  # fmt: skip
    temperature: float = knob(0.8, "Temperature", "Target and draft temperature; 0 is greedy: accept exactly the "
                              "target's argmax.", lo=0.01, hi=10.0, zero=True, app=(0.0, 2.0), step=0.05,
                              widget="slider", main=True)  # fmt: skip
    max_new_tokens: int = knob(200, "Max new tokens", "Characters to generate.", lo=1, hi=4096, app=(1, 1000),
                               step=10, main=True)  # fmt: skip
    seed: int = knob(0, "Seed", "Same seed and settings, same run.", lo=0, hi=SEED_MAX, app=(0, 2**31 - 1), main=True)
    min_context_count: int = knob(2, "min_context_count", "Fall back to a shorter context when this one was seen "
                                  "fewer times than this in training (trigram: the bigram row).", lo=0, hi=1_000_000,
                                  app=(0, 50), widget="slider", main=True,
                                  **_n("trigram", "distilled", "distilled-tree"))  # fmt: skip
    verification: str = knob("lossless", "Verification", "How the target decides which drafted characters to "
                             "keep; the lossy rules are kept to show them failing in the Exactness lab. Below, p is the target's "
                             "probability of a character and q is the drafter's probability of it.",
                             widget="select", main=True, choices=verifier_names, option=verifier_label,
                             describe=lambda name: get_verifier(name).summary)  # fmt: skip
    tree_sampling: str = knob("without-replacement", "Tree sampling", "How a sampled tree's siblings are drawn from "
                              "the draft's q: with replacement (SpecInfer: i.i.d., repeats allowed) or without "
                              "(Sequoia: each from q minus the earlier siblings); both lossless when verified as "
                              "drawn.", widget="select", main=True, trait="sampled_tree",
                              choices=lambda: SAMPLINGS)  # fmt: skip
    tree_shape: str = knob("dynamic", "Tree shape", "How a tree drafter with a static shape spends its node budget: "
                           "grown best first from its own confidence (dynamic), or Sequoia's shape, the most "
                           "expected accepted characters by a dynamic programme over acceptance rates by sibling "
                           "rank and depth, measured on the training split.", widget="select", main=True,
                           trait="shaped", choices=lambda: SHAPES)  # fmt: skip
    fly_entropy: float = knob(THETA, "FLy entropy gate (theta, nats)", "FLy defers a rejection only where the "
                              "target's entropy is above this; lower defers more (and biases more).", lo=0.0,
                              hi=5.0, step=0.05, main=True, verification=("fly",))  # fmt: skip
    fly_window: int = knob(WINDOW, "FLy window (W)", "A deferred rejection is forgiven when the next W - 1 drafted "
                           "characters all pass; it needs K of at least W.", lo=2, hi=32, app=(2, 16), main=True,
                           verification=("fly",))  # fmt: skip
    # Each drafter's own knobs.
    trie_n: int = knob(13, "n (n-gram length)", "The n-gram length stored from the prompt.", lo=2, hi=64,
                       app=(2, 32), **_n("trie"))  # fmt: skip
    trie_prefix_len: int = knob(3, "L_p (prefix length)", "The length of the context suffix matched against the "
                                "trie.", lo=1, hi="trie_n", strict=True, app=(1, 16), **_n("trie"))  # fmt: skip
    trie_num_draft: int = knob(16, "num_draft (tree size)", "The most nodes in the pruned draft tree.", lo=1,
                               hi=1024, app=(1, 64), **_n("trie"))  # fmt: skip
    nasd_n: int = knob(3, "n (context length)", "The context length of the adaptive storage: n - 1 tokens predict "
                       "the next.", lo=2, hi=32, app=(2, 8), **_n("nasd"))  # fmt: skip
    nasd_filler_top_k: int = knob(1, "filler_top_k", "The target's top-k tokens added to the storage after each "
                                  "round.", lo=1, hi=64, app=(1, 8), **_n("nasd"))  # fmt: skip
    nasd_stop_if_unknown: bool = knob(True, "stop_if_unknown", "Stop drafting at an unseen context instead of "
                                      "filling with the commonest token.", widget="checkbox",
                                      flag="--nasd-continue-if-unknown", **_n("nasd"))  # fmt: skip
    lookup_max_ngram: int = knob(3, "window (max n-gram)", "The longest n-gram of the context searched for in the "
                                 "prompt.", lo=1, hi=64, app=(1, 8), **_n("prompt-lookup"))  # fmt: skip
    lookup_min_ngram: int = knob(1, "min n-gram", "The shortest n-gram tried before giving up.", lo=1,
                                 hi="lookup_max_ngram", app=(1, 8), **_n("prompt-lookup"))  # fmt: skip
    distilled_context: int = knob(8, "L (context)", "The longest context, in characters, looked up in the table of "
                                  "the target's own predictions; shorter ones are the back-off.", lo=0,
                                  hi=MAX_CONTEXT, app=(0, 10), **_n("distilled", "distilled-tree"))  # fmt: skip
    distilled_nodes: int = knob(16, "node budget", "The node budget of the best-first draft tree.", lo=1, hi=64,
                                **_n("distilled-tree"))  # fmt: skip
    suffix_max_match: int = knob(16, "longest match", "The longest suffix of the context looked up in the context "
                                 "and corpus indices.", lo=1, hi=64, app=(1, 32), **_n("suffix"))  # fmt: skip
    suffix_min_prob: float = knob(0.1, "min path probability", "Grow the candidate tree while a path's empirical "
                                  "probability (its count over the match's) is at least this; lower grows bigger "
                                  "trees.", lo=0.0, hi=1.0, step=0.05, **_n("suffix"))  # fmt: skip
    suffix_max_nodes: int = knob(16, "node budget", "The most nodes in the candidate tree.", lo=1, hi=64,
                                 **_n("suffix"))  # fmt: skip
    layer_skip_layers: int = knob(2, "draft layers", "How many of the target's first layers draft, exiting early "
                                  "through its final norm and head; more layers draft better and cost more (at most "
                                  "the target's layers - 1).", lo=1, hi=63, app=(1, 3), **_n("layer-skip"))  # fmt: skip
    neural_tree_nodes: int = knob(16, "node budget", "The node budget of the tree grown from the tiny model's "
                                  "confidence.", lo=1, hi=64, **_n("neural-tree"))  # fmt: skip
    neural_tree_children: int = knob(3, "children per node", "The most children a node gets (its top tokens at "
                                     "T = 0, draws at T > 0).", lo=1, hi=8, **_n("neural-tree"))  # fmt: skip
    dflash_tree_nodes: int = knob(16, "node budget", "The node budget of the DDTree grown best first from the "
                                  "parallel head's per-slot distributions.", lo=1, hi=64, **_n("dflash-tree"))  # fmt: skip
    lookahead_window: int = knob(5, "W (window columns)", "The columns of the Jacobi window of guessed future "
                                 "characters that rides in every verify pass (more columns: more n-grams per pass, a "
                                 "longer pass).", lo=1, hi=32, app=(1, 16), **_n("lookahead"))  # fmt: skip
    lookahead_ngram: int = knob(4, "N (n-gram size)", "The window keeps the last N - 1 Jacobi steps and candidates "
                                "are up to N - 1 characters deep.", lo=2, hi=8, **_n("lookahead"))  # fmt: skip
    lookahead_candidates: int = knob(5, "G (candidates)", "The n-grams kept per first character in the pool, all "
                                     "verified as one tree.", lo=1, hi=32, app=(1, 16), **_n("lookahead"))  # fmt: skip
    medusa_nodes: int = knob(16, "node budget", "The node budget of the candidate tree (the paths with the highest "
                             "product of head probabilities are kept).", lo=1, hi=64, **_n("medusa"))  # fmt: skip
    medusa_top_k: int = knob(3, "candidates per head", "The top tokens of each head; head i's are the candidates at "
                             "depth i.", lo=1, hi=8, **_n("medusa"))  # fmt: skip
    eagle_ttt: bool = knob(True, "trained with training-time test", "Use the head trained with training-time test (its own "
                           "fed-back states unrolled in training); off: the same head trained on step 0 only, whose "
                           "later draft steps fall apart.", widget="checkbox", flag="--eagle-no-ttt",
                           **_n("eagle3", "eagle3-tree"))  # fmt: skip
    eagle_tree_nodes: int = knob(16, "node budget", "The node budget of the dynamic tree grown from the head's "
                                 "confidence.", lo=1, hi=64, **_n("eagle3-tree"))  # fmt: skip
    eagle_tree_children: int = knob(3, "children per node", "The most children a node gets.", lo=1, hi=8,
                                    **_n("eagle3-tree"))  # fmt: skip
    mtp_modules: int = knob(MTPConfig.depth, "modules (D)", f"Module k drafts depth k, so a round drafts min(K, D) "
                            f"characters: there is no module past the {MTPConfig.depth} trained, and a K above D "
                            "drafts D.", lo=1, hi=MTPConfig.depth, **_n("mtp"))  # fmt: skip

    def check(self) -> None:
        """Raise ValueError with a user-facing sentence for settings out of range, or a verifier that
        refuses the drafter's drafts. Checks against a model's config are the drafter's (Drafter.check)."""
        for name, k in KNOBS.items():
            if (problem := k.problem(getattr(self, name), self)) is not None:
                raise ValueError(problem)
        refusal = get_verifier(self.verification).refuses(drafter_class(self.drafter), self)
        if refusal:
            raise ValueError(refusal)


KNOBS: dict[str, Knob] = {f.name: f.metadata["knob"] for f in fields(Settings)}


def method_knobs(drafter: str) -> dict[str, Knob]:
    """The knobs that belong to one drafter, in declaration order."""
    return {name: k for name, k in KNOBS.items() if drafter in k.method}
