"""What the page "Why does speculation get slower on a busy server?" shows, computed without Streamlit: one
round of every sequence of a batch (who drafted what, who accepted what, the rows the one pass carried), the
K adaptive K chooses at each batch size on this machine's roofline, and the closing paragraph in the stored
batch bench's own numbers (specviz/bench/batch.py)."""

from models.checkpoint import Checkpoint
from specviz.adaptive.costs import CostCurve
from specviz.adaptive.load import LoadCosts
from specviz.adaptive.policy import AUTO_K_MAX
from specviz.adaptive.rates import best_k
from specviz.bench.batch import crossover
from specviz.core.batch import Batch
from specviz.core.engine import Generation
from specviz.core.settings import Settings
from specviz.drafters import BASELINE, drafter_class
from specviz.teaching.presets import PRESETS


def batch_rows(rows: list[dict], every_model: bool = False) -> list[dict]:
    """The batch bench's rows of a bench file (suite "batch"): the character model's, or with ``every_model``
    the real models' too (bench --batch --model)."""
    return [r for r in rows if r.get("suite") == "batch" and (every_model or r.get("model") is None)]


def one_round(target: Checkpoint, tiny: Checkpoint | None, drafter: str, B: int, k: int = 4) -> tuple[list, int]:
    """A batch of B sequences (the presets in turn, prompts prefilled), one round, one target pass, T = 0.
    -> (per sequence: prompt, drafted, accepted, emitted, rows it sent), the rows the pass carried"""
    draft_model = tiny.model if tiny is not None and "draft_model" in drafter_class(drafter).needs else None
    presets = [PRESETS[i % len(PRESETS)] for i in range(B)]
    gens = [Generation(target, target.tokenizer.encode(p.text), Settings(drafter=drafter, k=k, temperature=0,
                                                                         max_new_tokens=8, seed=i), draft_model)
            for i, p in enumerate(presets)]  # fmt: skip
    for g in gens:
        g.target.sync(g.tokens)
    batch = Batch(gens)
    records = batch.step()
    text = target.tokenizer.decode
    out = [{"sequence": i + 1, "prompt": p.name, "drafted": text(r.draft_tokens), "accepted": len(r.accepted_path),
            "emitted": text(r.emitted), "rows sent": 1 + len(r.draft_tokens)}
           for i, (p, r) in enumerate(zip(presets, records, strict=True))]  # fmt: skip
    return out, batch.rows[-1]


def chosen_k(drafter: str, alpha: float, curve: CostCurve, seconds, batches) -> list[tuple[int, int]]:
    """(B, the K adaptive K chooses) at each batch size, for a chain accepted at rate ``alpha`` (the stored
    bench's), priced by specviz/adaptive/load.py on ``seconds(rows, seqs)`` (this machine's roofline)."""
    cls, load = drafter_class(drafter), LoadCosts(curve, seconds)
    out = []
    for B in batches:
        v, scale = load.at(B)
        k = best_k(alpha, cls.nodes_per_level, cls.draft_cost * scale, cls.max_depth or AUTO_K_MAX, cls.verify_extra,
                   v, cls.max_nodes, cls.level_cost * scale)  # fmt: skip
        out.append((B, k))
    return out


def machine(row: dict) -> str:
    """How busy the machine was during a stored run, in words: the bench's own thread alone keeps the load
    average near 1, anything well above it is other work sharing the cores."""
    return "a quiet machine" if row["load_average"] < 1.5 else "a busy shared machine: noisy"


def closing(rows: list[dict]) -> str:
    """The answer to "speculative decoding made it slower: why?", in the stored run's numbers."""
    rows = [r for r in batch_rows(rows) if not r.get("k_auto", False)]
    drafters = [d for d in dict.fromkeys(r["drafter"] for r in rows) if d != BASELINE]
    if not rows or not drafters:
        return ""
    at = {(r["drafter"], r["batch"]): r for r in rows}
    sizes = sorted({r["batch"] for r in rows})
    lo, hi = sizes[0], sizes[-1]
    plain = (at[(BASELINE, lo)]["tokens_per_s"], at[(BASELINE, hi)]["tokens_per_s"])
    parts = []
    for d in drafters:
        b = crossover(rows, d)
        s_lo, s_hi = at[(d, lo)]["speedup"], at[(d, hi)]["speedup"]
        where = (f"stopped paying at about B = {b:.0f}" if b is not None else
                 "was below 1 from the start" if s_lo < 1 else f"still paid at B = {hi}")  # fmt: skip
        parts.append(f"{d}: {s_lo:.2f}× at B = {lo}, {s_hi:.2f}× at B = {hi}, {where}")
    first = rows[0]
    return (f"On {first['cpu']} ({first['date']}, load average {first['load_average']}: {machine(first)}), plain decoding went "
            f"from {plain[0]:.0f} to {plain[1]:.0f} tokens/s as the batch grew from {lo} to {hi}: one pass reads "
            "the weights once for every sequence. A draft rides along for free only while the pass is bound by "
            "reading memory; with many sequences the pass is bound by arithmetic, the draft's extra rows cost what "
            "they weigh, and each sequence's drafting is work the batch does not share. So: "
            + "; ".join(parts) + ". That is why speculation can make a busy server slower, and why adaptive K "
            "drafts less, down to nothing, as the batch grows.")  # fmt: skip


def frame(rows: list[dict]):
    """A table's rows as a pandas frame (the page's tables)."""
    import pandas as pd

    return pd.DataFrame(rows)
