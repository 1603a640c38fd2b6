"""What the bench's rows say, and how they print: whether a speedup is real, and the readable table.

How far from 1.00 must a speedup be to be real? In each repeat the baseline runs once more for
every prompt, shuffled in with the others, and the main suite's baseline rows report that second run's
speedup over the first (``aa_speedup``, an A/A test: the same work twice). A drafter whose
speedup is as close to 1 as that cannot be told from the baseline. Each main-suite row also says
so itself (``verdict``): its runs are paired with the baseline's (same repeat, same prompt), and a
two-sided sign test over the pairs (``verdict_p``) calls it faster or slower below p = 0.01, a tie
otherwise. The baseline's own row pairs its two runs: the A/A test's verdict, which should be a tie.

``format_table`` prints rows as text or Markdown; ``NOTES`` / ``NOTES_NO_HF`` say what its columns mean.
"""

import math
import statistics

from specviz.bench.rows import OPTIONAL


def aa_speedup(first, second) -> float:
    """The baseline against itself: per repeat, its first run's seconds over its second's, summed
    over the prompts (lists over repeats of lists over prompts of timing.Run); median over repeats."""
    return statistics.median(sum(r.seconds for r in a) / sum(r.seconds for r in b)
                             for a, b in zip(first, second, strict=True))  # fmt: skip


VERDICT_P = 0.01  # a row is called faster or slower only below this two-sided p-value


def sign_test(wins: int, losses: int) -> float:
    """Two-sided sign test: how often a fair coin splits wins + losses trials at least this unevenly."""
    n, k = wins + losses, max(wins, losses)
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k, n + 1)) / 2**n)


def verdict(base, runs) -> tuple[str, float]:
    """Faster, slower or a tie against the baseline: each run paired with the baseline's on the same
    prompt in the same repeat (lists over repeats of lists over prompts of timing.Run). -> (verdict, p)"""
    pairs = [
        (b.seconds, r.seconds) for b_rep, rep in zip(base, runs, strict=True) for b, r in zip(b_rep, rep, strict=True)
    ]
    return paired_verdict(pairs)


def paired_verdict(pairs: list[tuple[float, float]]) -> tuple[str, float]:
    """Faster, slower or a tie, by the sign test over (the baseline's cost, the row's cost) pairs, each a cost
    per unit of work (seconds, or seconds a token). -> (verdict, p)"""
    faster, slower = sum(r < b for b, r in pairs), sum(r > b for b, r in pairs)
    p = sign_test(faster, slower)
    return ("tie" if p >= VERDICT_P else "faster" if faster > slower else "slower"), p


NOTES_NO_HF = """\
K: the draft depth; auto≤12: adaptive K (each drafter's default configuration), at most 12.
tok/fwd: tokens per target forward pass, the speedup if drafting and verifying K+1 tokens cost
nothing. speedup: over the KV-cached baseline (drafter none) in the same run, median of interleaved
repeats. of ideal: speedup / tok/fwd. draft c: time to draft one token, verify v: time of one
verification pass, book: the bookkeeping of one round (accept, trim, record), all three relative
to one baseline forward pass. same: greedy output identical to the
baseline's. verify: the verification rule. τ tok, τ block: block rows only, on the run's own
drafts, 1 + the mean expected accepted tokens per round under token-wise and block verification.
τ trav: traversal rows (tree drafters), the same under traversal verification (and τ tok beside it).
A/A: baseline rows, the baseline timed again in each repeat, its speedup over the first run
(median): a speedup no further from 1.00 than that is noise. vs base: faster, slower or tie, by a
sign test (p < 0.01) over the runs paired with the baseline's (same repeat and prompt); the
baseline's row: its A/A pairs."""

NOTES = (
    NOTES_NO_HF
    + """
vs-transformers: a GPT-2 with 256 positions cannot slide its context window, so in this suite both
implementations generate n tokens after each prompt cut to its last 256 - n - K tokens (all in one
window); its speedups are over our baseline in the same suite."""
)

COLUMNS = (  # (header, key, format) of the readable table
    ("suite", "suite", "{}"),
    ("impl", "impl", "{}"),
    ("drafter", "drafter", "{}"),
    ("verify", "verification", "{}"),
    ("K", "k", "{}"),
    ("T", "temperature", "{:g}"),
    ("tok/fwd", "tokens_per_forward", "{:.2f}"),
    ("accept", "acceptance_rate", "{:.0%}"),
    ("tok/s", "tokens_per_s", "{:.0f}"),
    ("speedup", "speedup", "{:.2f}x"),
    ("A/A", "aa_speedup", "{:.3f}x"),
    ("vs base", "verdict", "{}"),
    ("of ideal", "fraction_of_ideal", "{:.0%}"),
    ("draft c", "draft_cost", "{:.3f}"),
    ("verify v", "verify_cost", "{:.2f}"),
    ("book", "accept_cost", "{:.3f}"),
    ("same", "same_as_baseline", "{}"),
    ("τ tok", "tau_same_lossless", "{:.2f}"),
    ("τ block", "tau_same_block", "{:.2f}"),
    ("τ trav", "tau_same_traversal", "{:.2f}"),
    ("MB", "memory_mb", "{:.1f}"),
)
LEFT = 4  # the first columns (names) are left-aligned, the numbers right-aligned


def format_table(rows: list[dict], markdown: bool = False) -> str:
    """The rows as an aligned text table (or a Markdown one). Missing values print as '-'."""
    cells = [[h for h, _, _ in COLUMNS]]
    for r in rows:
        r = OPTIONAL | r | {"k": f"auto≤{r['k']}" if r.get("k_auto") else r["k"]}
        if r["suite"] == "llm":  # one row per prompt, then the set's: the suite cell names which
            r["suite"] = f"llm/{r['prompt'] or 'all'}"
        cells.append(["-" if r[key] is None else fmt.format(r[key]) for _, key, fmt in COLUMNS])
    if markdown:
        lines = ["| " + " | ".join(row) + " |" for row in cells]
        lines.insert(1, "|" + "|".join("---" if i < LEFT else "---:" for i in range(len(COLUMNS))) + "|")
        return "\n".join(lines) + "\n"
    widths = [max(len(row[i]) for row in cells) for i in range(len(COLUMNS))]
    lines = []
    for row in cells:
        padded = [c.rjust(w) if i >= LEFT else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        lines.append("  ".join(padded).rstrip() + "\n")
    return "".join(lines)
