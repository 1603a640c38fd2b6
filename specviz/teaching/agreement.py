"""Do two pages' speedups for the same configuration agree? Each page states a speedup with its
run-to-run spread (the race: its 3 interleaved runs; the bench and the shoot-out: the min-max over
their repeats). Two figures agree when those ranges overlap. When they do not, the reason is said
plainly: another CPU, other text decoded (a speedup depends on how predictable the text is), or,
with neither, a disagreement the spreads do not cover (the machine's load changed between them).

Pure functions: the pages build a Figure from what they show and print ``sentence``."""

from dataclasses import dataclass

from specviz.teaching.atlas import Method, bench_row
from specviz.teaching.race import Lane, spread


@dataclass(frozen=True)
class Figure:
    where: str  # the page's words for it: "this race", "the atlas's stored run"
    speedup: float  # the figure the page shows (a median)
    low: float  # the lowest speedup of its repeats
    high: float  # the highest
    runs: int  # how many repeats the spread is over
    cpu: str | None  # the CPU it was measured on (None: not recorded)
    text: str  # what was decoded: "11 prompts × 256 characters"


def agree(a: Figure, b: Figure) -> bool:
    """Whether the two run-to-run ranges overlap, as the page shows them (two decimals): a reader who sees
    2.05–2.28× beside 2.28–2.54× sees them touch, and the verdict must say what the figures say."""
    shown = lambda x: round(x, 2)  # noqa: E731
    return shown(a.low) <= shown(b.high) and shown(b.low) <= shown(a.high)


def reasons(a: Figure, b: Figure) -> list[str]:
    """Why two figures need not agree: what differs between their conditions ([] if nothing does)."""
    out = []
    if a.cpu != b.cpu:
        out.append(f"{b.where} ran on another CPU ({b.cpu or 'not recorded'})")
    if a.text != b.text:
        out.append(f"it decoded other text ({b.text}, against {a.text} here)")
    return out


def _range(f: Figure) -> str:
    return f"{f.speedup:.2f}× ({f.low:.2f}–{f.high:.2f}× over its {f.runs} runs)"


def sentence(a: Figure, b: Figure) -> str:
    """One or two sentences: ``a`` (this page's figure) against ``b`` (another page's, same configuration)."""
    head = f"{b.where[:1].upper()}{b.where[1:]} measured this configuration at {_range(b)}; {a.where}: {_range(a)}."
    if agree(a, b):
        return f"{head} The two agree within their run-to-run spread."
    why = reasons(a, b)
    if why:
        return f"{head} They differ by more than their spread, and need not agree: {'; '.join(why)}."
    return (f"{head} They differ by more than their spread under the same conditions: the machine's load changed "
            "between them; measure again.")  # fmt: skip


def bench_figure(rows: list[dict], drafter: str, temperature: float, k: int, auto: bool, where: str) -> Figure | None:
    """The stored bench run's figure for a drafter under token-wise verification at ``temperature``, K = ``k``
    (fixed) or adaptive; None where the run has no such row or recorded no spread."""
    r = bench_row(rows, Method(drafter, "", "", ""), temperature, auto)
    if r is None or (not auto and r["k"] != k):
        return None
    return row_figure(r, where)


def row_figure(r: dict, where: str) -> Figure | None:
    """A bench row's figure (the bench's or the shoot-out's), None where it recorded no spread."""
    if r.get("speedup_min") is None:
        return None
    prompts = f"{r['prompts']} prompts" if r["prompts"] != 1 else "1 prompt"
    return Figure(where, r["speedup"], r["speedup_min"], r["speedup_max"], r["repeats"], r.get("cpu"),
                  f"{prompts} × {r['new_tokens']} characters")  # fmt: skip


def tally(pairs: list[tuple[str, Figure, Figure]]) -> str:
    """Many drafters at once (the shoot-out against the stored run): (drafter, here, stored) pairs -> how
    many agree within both spreads, which differ, and why they need not agree ('' without pairs)."""
    if not pairs:
        return ""
    off = [(name, a, b) for name, a, b in pairs if not agree(a, b)]
    _, a, b = pairs[0]
    text = (f"Against {b.where} at the same K and temperature: {len(pairs) - len(off)} of {len(pairs)} drafters "
            "agree within both run-to-run spreads")  # fmt: skip
    if not off:
        return text + "."
    listed = ", ".join(f"{n} ({x.speedup:.2f}× here, {y.speedup:.2f}× stored)" for n, x, y in off)
    why = reasons(a, b)
    because = f"; they need not agree: {'; '.join(why)}" if why else "; under the same conditions: the load changed"
    return f"{text}; differ: {listed}{because}."


def race_figure(plain: Lane, spec: Lane, cpu: str, text: str) -> Figure | None:
    """The race's figure: its median runs' speedup, the spread of its interleaved repeats (None without)."""
    if (lo_hi := spread(plain, spec)) is None or spec.seconds <= 0:
        return None
    return Figure("this race", plain.seconds / spec.seconds, *lo_hi, len(plain.runs), cpu, text)


def timing_figure(timing: dict, cpu: str, text: str, where: str = "this lesson's run") -> Figure:
    """The lesson's figure (specviz.teaching.lesson.measure_speedup's result): its median and its repeats' range."""
    lo, hi = timing.get("spread", (timing["speedup"],) * 2)
    return Figure(where, timing["speedup"], lo, hi, timing["repeats"], cpu, text)
