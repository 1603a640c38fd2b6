"""The methods atlas: every way the app drafts and verifies, side by side. Each method answers
"where does the draft come from?" differently; the figures (acceptance, tokens per forward,
speedup, draft cost, memory) come from one bench run's rows (specviz/bench/runner.py), never from here.

A method is a drafter with a verification rule. ``METHODS`` holds what a reader needs beside the
figures: the source of the draft, the paper, and the preset that suits it (the atlas page links
each method to its step page on that preset). Whether it is lossless comes from the verifier.
"""

from dataclasses import dataclass
from urllib.parse import urlencode

from specviz.verifiers import VERIFIERS


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


METHODS = (
    Method("none", "no draft: plain decoding, one target pass per token", "the baseline", "Free verse"),
    Method("bigram", "character bigram counts of the training split", "seed 001 (n-gram drafting)", "Free verse"),
    Method("trigram", "character trigram counts, bigram fallback below min_context_count", "seed 002", "Dialogue"),
    Method("trie", "an n-gram trie of the prompt, drafted as a tree", "seed 005; SpecInfer (Miao et al., 2024) trees",
           "Quote a passage"),
    Method("nasd", "n-gram storage that grows from the prompt and every round's output",
           "seed 004 (N-gram assisted speculative decoding)", "Repetitive"),
    Method("nasd", "the same drafts, checked by seed 004's correction rule", "seed 004", "Repetitive", "nasd-seed"),
    Method("prompt-lookup", "the longest matching n-gram earlier in the context", "Prompt lookup decoding (Saxena, 2023)",
           "Quote a passage"),
    Method("neural", "a tiny GPT (0.2M parameters) drafting autoregressively",
           "Speculative sampling (Leviathan et al., 2023; Chen et al., 2023)", "Free verse"),
    Method("neural-tree", "the tiny GPT, a tree grown from its confidence", "EAGLE-2 dynamic trees (Li et al., 2024); "
           "SpecInfer / Sequoia sampling", "Free verse"),
    Method("distilled", "a table of the target's own predictions after short contexts", "target distillation, as "
           "DistillSpec (Zhou et al., 2024), in a lookup table", "Dialogue"),
    Method("distilled-tree", "the distilled table, a best-first tree", "as distilled; trees as SpecInfer", "Dialogue"),
    Method("suffix", "suffix indices over the context and the training corpus", "SuffixDecoding (Oliaro et al., 2024)",
           "A song's refrain"),
    Method("layer-skip", "the target's own first layers, exiting early", "LayerSkip (Elhoushi et al., 2024); Draft & "
           "Verify (Zhang et al., 2023)", "Dialogue"),
    Method("lookahead", "n-grams collected from Jacobi iterations run inside the verify pass",
           "Lookahead decoding (Fu et al., 2024)", "Counting"),
    Method("medusa", "extra heads on the target's own top-layer feature (read from its cache), a tree of their "
           "top tokens", "Medusa (Cai et al., 2024)", "Dialogue"),
    Method("trigram", "trigram drafts, verified as a block", "Block verification (Sun et al., 2024)", "Dialogue",
           "block"),
    Method("medusa", "the Medusa heads' tree, accepted by typical acceptance (p above an entropy-scaled floor)",
           "Medusa (Cai et al., 2024)", "Dialogue", "typical"),
    Method("eagle1", "a one-block head that predicts the target's next top-layer feature from its features",
           "EAGLE (Li et al., 2024)", "Dialogue"),
    Method("eagle3", "a one-block head on low, middle and top features fused, trained with training-time test",
           "EAGLE-3 (Li et al., 2025)", "Dialogue"),
    Method("eagle3-tree", "the EAGLE-3 head, a dynamic tree grown from its confidence", "EAGLE-2 trees (Li et al., "
           "2024) on EAGLE-3 (Li et al., 2025)", "Dialogue"),
    Method("eagle3-tree", "the EAGLE-3 tree, verified leaves first, whole paths at a time",
           "Traversal verification (Weng et al., 2025)", "Dialogue", "traversal"),
    Method("neural-tree", "the tiny GPT's sampled tree, verified leaves first, whole paths at a time",
           "Traversal verification (Weng et al., 2025)", "Free verse", "traversal"),
)  # fmt: skip


def bench_row(rows: list[dict], m: Method, temperature: float, auto: bool = False) -> dict | None:
    """The main suite's row of method ``m`` at ``temperature`` (fixed K, or its default: adaptive K)."""
    for r in rows:
        if (r["suite"], r["impl"], r["drafter"], r.get("verification", "lossless"), r.get("k_auto", False)) == (
            "main", "specviz", m.drafter, m.verification, auto
        ) and r["temperature"] == temperature:  # fmt: skip
            return r
    return None


def atlas_rows(rows: list[dict], methods=METHODS) -> list[dict]:
    """One dict per method: what it is, and its figures from the bench ``rows`` at the run's fixed K
    and with adaptive K (None where the run has no row for it: a method newer than the run, say),
    and the link to its step page."""
    out = []
    for m in methods:
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
