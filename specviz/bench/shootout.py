"""The drafter shoot-out: every drafter (its knobs at their defaults) on one prompt and seed, timed against the baseline in the
same run (specviz.bench.runner does the timing), over a sweep of K, plus what the timing alone cannot
show: each drafter's acceptance by position and its tokens per round against the model.

    measured    specviz.bench.runner rows, one per (drafter, K): tokens per forward, acceptance,
                speedup over the baseline (median over interleaved repeats), draft cost c
    model       speedup ~ E[tokens per round] / (K c + v), with E = (1 - a^(K+1)) / (1 - a)
                from the measured acceptance rate a, c the cost of drafting one token and v
                the cost of one verification pass, both relative to one baseline forward pass
    rules       per chain drafter, tau (tokens per target forward) with token-wise and with block
                verification, each measured on its own run, and both rules' expectations on the
                same drafts (the block run's: 1 + mean over rounds of the expected accepted tokens
                its verifier recorded for each draft). Measured runs differ in their drafts and
                draws; the same-draft figures compare the rules alone.
    tree rules  the same per tree drafter with token-wise and traversal verification (Weng et al.
                2025), the same-draft figures from the traversal run's rounds.
"""

from dataclasses import dataclass, field

from models.checkpoint import Checkpoint
from specviz.bench.runner import run_bench
from specviz.bench.timing import bench_settings, expected_totals
from specviz.core.engine import Generation
from specviz.core.settings import Settings
from specviz.drafters import BASELINE, drafter_class, drafter_names
from specviz.teaching.presets import Preset
from specviz.teaching.stats import acceptance_by_position, expected_tokens_per_round
from specviz.verifiers import LOSSLESS, alternatives

SWEEP_KS = (1, 2, 4, 8)


@dataclass
class Shootout:
    rows: list[dict]  # bench rows (specviz.bench.rows.BenchRow fields), one per (drafter, K)
    by_position: dict[str, list[dict]]  # drafter -> acceptance by draft position, at the chosen K
    k: int  # the chosen K (the sidebar's)
    rules: list[dict]  # per chain drafter at K: tau token-wise and block, measured and on the same drafts
    tree_rules: list[dict] = field(default_factory=list)  # per tree drafter at K: token-wise and traversal
    chain_rule: str = ""  # the lossless alternative the chains were also verified with (block)
    tree_rule: str = ""  # and the trees' (traversal)
    measured: dict = field(default_factory=dict)  # the page's: where, when and how long (ui/shootout.py)


def tau(trace) -> float:
    """Tokens per target forward pass of a traced run."""
    return len(trace.tokens) / len(trace.rounds)


def rules_row(drafter: str, lossless, other, rule: str) -> dict:
    """tau of a token-wise and of a ``rule``-verified trace of ``drafter``, and both rules on the
    ``rule`` run's drafts."""
    same = expected_totals(other.rounds)
    n = len(other.rounds)
    return {"drafter": drafter, f"tau_{LOSSLESS}": tau(lossless), f"tau_{rule}": tau(other),
            f"tau_same_{LOSSLESS}": 1 + same[LOSSLESS] / n, f"tau_same_{rule}": 1 + same[rule] / n}  # fmt: skip


def modelled_speedup(row: dict) -> float | None:
    """The speedup the standard model predicts from a row's own acceptance rate and costs."""
    if row["drafter"] == BASELINE or row["acceptance_rate"] is None or row["verify_cost"] is None:
        return None
    per_round = expected_tokens_per_round(row["acceptance_rate"], row["k"])
    return per_round / (row["k"] * row["draft_cost"] + row["verify_cost"])


def network_chains() -> tuple[str, ...]:
    """The chain drafters that run a network to draft (a draft model, or heads on the target's features), read
    from the registry: the draft-cost-against-K chart's lines."""
    return tuple(d for d in drafter_names(drafts=True, tree=False) if drafter_class(d).needs & {"draft_model", "heads"})


def draft_cost_per_round(rows: list[dict]) -> dict[str, dict[int, float]]:
    """{drafter: {K: draft time per round / the baseline's time per forward pass}} for network_chains(), from
    bench rows (token-wise, fixed K): what drafting a round costs, in target passes, however many tokens it holds."""
    base = {(r["k"], r["temperature"]): r for r in rows if r["drafter"] == BASELINE and r["impl"] == "specviz"}
    chains, out = network_chains(), {}
    for r in rows:
        b = base.get((r["k"], r["temperature"]))
        if (r["drafter"] in chains and not r["k_auto"] and r["verification"] == LOSSLESS and r["draft_s"] is not None
                and b is not None and b["verify_s"] and r["target_forwards"]):  # fmt: skip
            out.setdefault(r["drafter"], {})[r["k"]] = (
                r["draft_s"] / r["target_forwards"] / (b["verify_s"] / b["target_forwards"])
            )
    return out


def run_shootout(target: Checkpoint, tiny: Checkpoint, prompt: str, settings: Settings, ks=SWEEP_KS,
                 repeats: int = 3, progress=None, compare_rules: bool = True) -> Shootout:  # fmt: skip
    """``progress(done, total)`` after every generation, over the whole sweep; ``compare_rules=False`` leaves out
    the runs under the alternative rules (block, traversal): the quick run."""
    ks = sorted({*ks, settings.k})
    preset = Preset("shoot-out prompt", "free", prompt, "")
    drafters, shape_rule = drafter_names(), {shape: rule for rule, shape in alternatives().items()}
    drafting = drafter_names(drafts=True)
    chains, trees = drafter_names(drafts=True, tree=False), drafter_names(tree=True)
    if not compare_rules:
        chains, trees = [], []
    per_k = (len(drafters) + 1) * repeats  # every drafter, and the baseline once more (the bench's A/A run)
    # the sweep, then one traced run per drafter but the baseline, then one run per chain drafter under the
    # chains' alternative rule (block) and one per tree drafter under the trees' (traversal)
    total = per_k * len(ks) + len(drafting) + len(chains) + len(trees)
    rows, memory = [], None
    for i, k in enumerate(ks):
        tick = (lambda done, _, base=i * per_k: progress(base + done, total)) if progress else None
        rows += run_bench(target, tiny, [preset], drafters, [settings.temperature], k, settings.max_new_tokens,
                          repeats, settings.seed, tick, memory=memory)  # fmt: skip
        memory = {r["drafter"]: r["memory_mb"] for r in rows}  # measured at the first K, the same at every K
    ids = target.tokenizer.encode(prompt)
    by_position, traces, done = {}, {}, per_k * len(ks)
    runs = [(d, LOSSLESS) for d in drafting] + [
        (d, shape_rule["chains"]) for d in chains
    ]  # the baseline drafts nothing
    runs += [(d, shape_rule["trees"]) for d in trees]
    for d, rule in runs:
        same = bench_settings(d, settings.temperature, settings.k, settings.max_new_tokens, settings.seed,
                              verification=rule)  # fmt: skip
        traces[d, rule] = Generation(target, ids, same, tiny.model).run()
        done += 1
        if progress:
            progress(done, total)
    by_position = {d: acceptance_by_position(traces[d, LOSSLESS].rounds) for d in drafting}
    rules = [rules_row(d, traces[d, LOSSLESS], traces[d, shape_rule["chains"]], shape_rule["chains"]) for d in chains]
    tree_rules = [rules_row(d, traces[d, LOSSLESS], traces[d, shape_rule["trees"]], shape_rule["trees"]) for d in trees]
    return Shootout(rows, by_position, settings.k, rules, tree_rules, shape_rule["chains"], shape_rule["trees"])
