"""The methods atlas: every way the app drafts and verifies, side by side. Each method answers
"where does the draft come from?" differently; the figures (acceptance, tokens per forward,
speedup, draft cost, memory) come from one bench run's rows (specviz/bench/runner.py), never from here.

A method is a drafter with a verification rule. ``methods()`` reads what a reader needs beside the
figures from the registries: the source of the draft, the paper, and the preset that suits it (the
atlas page links each method to its step page on that preset). Whether it is lossless comes from the
verifier.
"""

from dataclasses import dataclass
from urllib.parse import urlencode

from specviz.core.settings import Settings
from specviz.drafters import REGISTRY, drafter_class
from specviz.teaching.exactness import ALPHA, run_exactness, verdict
from specviz.teaching.presets import preset
from specviz.verifiers import VERIFIERS

# The bias table: the exactness lab on each lossy method, on its own preset. T = 1 and K = 4, where every
# lossy rule the atlas shows is caught with a few hundred runs; fixed seeds, so a table is reproducible.
BIAS = {"temperature": 1.0, "k": 4, "seed": 9600}
BIAS_SAMPLES = 600


@dataclass(frozen=True)
class Method:
    drafter: str
    source: str  # where the draft comes from
    paper: str
    preset: str  # the preset where it shows best (specviz/teaching/presets.py)
    verification: str = "lossless"

    @property
    def name(self) -> str:
        return self.drafter if self.verification == "lossless" else f"{self.drafter} ({self.verification})"

    @property
    def lossless(self) -> bool:
        return VERIFIERS[self.verification].lossless

    @property
    def link(self) -> str:
        """Its step page, on its preset (a relative URL: the app's own page)."""
        return f"step?{urlencode({'drafter': self.drafter, 'verification': self.verification, 'preset': self.preset})}"


FAMILY = "heads"  # a Drafter.needs entry: drafters that read the target's own features (Medusa, EAGLE, MTP)


def atlas_order() -> list[str]:
    """The registered drafters in registry order, except that every drafter whose ``needs`` holds FAMILY
    sits with the first one registered, so the heads on the target's features (Medusa's, EAGLE-1's,
    EAGLE-3's, the MTP modules) are rows side by side, however the registry lists them."""
    names = list(REGISTRY)
    family = [i for i, n in enumerate(names) if FAMILY in REGISTRY[n].needs]
    first = family[0] if family else 0
    return [names[i] for i in sorted(range(len(names)), key=lambda i: (first if i in family else i, i))]


def methods() -> tuple[Method, ...]:
    """Every registered drafter under token-wise verification (atlas_order), then every rule with the
    drafters it is shown with (Verifier.showcase): read from the registries when asked, so a new method is listed."""
    out = [Method(name, REGISTRY[name].summary, REGISTRY[name].paper, REGISTRY[name].preset) for name in atlas_order()]
    for v in VERIFIERS.values():
        for name in v.showcase:
            cls = drafter_class(name)
            out.append(Method(name, f"{cls.summary}, {v.how}", v.paper, cls.preset, v.name))
    return tuple(out)


def bench_row(rows: list[dict], m: Method, temperature: float, auto: bool = False) -> dict | None:
    """The main suite's row of method ``m`` at ``temperature`` (fixed K, or its default: adaptive K)."""
    for r in rows:
        if (r["suite"], r["impl"], r["drafter"], r.get("verification", "lossless"), r.get("k_auto", False)) == (
            "main", "specviz", m.drafter, m.verification, auto
        ) and r["temperature"] == temperature:  # fmt: skip
            return r
    return None


def atlas_rows(rows: list[dict], chosen: tuple[Method, ...] | None = None) -> list[dict]:
    """One dict per method: what it is, and its figures from the bench ``rows`` at the run's fixed K
    and with adaptive K (None where the run has no row for it: a method newer than the run, say),
    and the link to its step page."""
    out = []
    for m in chosen or methods():
        entry = {"method": m.name, "lossless": "lossless" if m.lossless else "LOSSY", "draft from": m.source,
                 "paper": m.paper, "open": m.link}  # fmt: skip
        for T in (0.0, 0.8):
            r = bench_row(rows, m, T) or {}
            auto = bench_row(rows, m, T, auto=True) or {}
            entry[f"α T={T:g}"] = r.get("acceptance_rate")
            entry[f"τ T={T:g}"] = r.get("tokens_per_forward")
            entry[f"speedup T={T:g}"] = r.get("speedup")
            entry[f"speedup auto T={T:g}"] = auto.get("speedup")
        fixed = bench_row(rows, m, 0.8) or bench_row(rows, m, 0.0) or {}
        entry["draft cost c"] = fixed.get("draft_cost")
        entry["memory MB"] = fixed.get("memory_mb")
        out.append(entry)
    return out


def bias_rows(target, draft_model=None, chosen: tuple[Method, ...] | None = None, samples: int = BIAS_SAMPLES,
              progress=None) -> list[dict]:  # fmt: skip
    """What each lossy method's speed costs in exactness: the exactness lab's verdict on ``samples`` runs
    of K + 1 characters (specviz/teaching/exactness.py) at BIAS's settings, its p-value (level ALPHA)
    and the total variation of its first characters from the target's exact distribution. ``chosen``:
    the lossy methods of the atlas by default; ``progress(done, total)`` after each."""
    chosen = chosen or tuple(m for m in methods() if not m.lossless)
    out = []
    for i, m in enumerate(chosen):
        settings = Settings(drafter=m.drafter, verification=m.verification, **BIAS)
        needs_draft = "draft_model" in drafter_class(m.drafter).needs
        prompt = target.tokenizer.encode(preset(m.preset).text)
        res = run_exactness(target, prompt, settings, samples, draft_model=draft_model if needs_draft else None)
        out.append({"method": m.name, "lossless": "lossless" if m.lossless else "LOSSY", "verdict": verdict(res, ALPHA)[0],
                    "p-value": res.p_value, "total variation": res.tv_distance, "runs": samples})  # fmt: skip
        if progress:
            progress(i + 1, len(chosen))
    return out
