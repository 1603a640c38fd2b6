"""The methods atlas (specviz/teaching/atlas.py, ui/atlas.py) and what a method holds (specviz/bench/memory.py)."""

import numpy as np
import torch

from specviz.bench.memory import drafter_megabytes, held_bytes
from specviz.charts.atlas import figures_frame, sources_frame
from specviz.core.engine import Generation
from specviz.core.settings import Settings
from specviz.drafters import drafter_class, drafter_names
from specviz.teaching.atlas import atlas_order, atlas_rows, bench_row, methods
from specviz.teaching.presets import preset
from specviz.verifiers import VERIFIERS

DRAFTERS = drafter_names()
METHODS = methods()


def test_every_drafter_and_rule_has_its_entry():
    assert {m.drafter for m in METHODS} == set(DRAFTERS)
    assert all(m.verification in VERIFIERS and preset(m.preset) for m in METHODS)
    assert len({m.name for m in METHODS}) == len(METHODS)
    assert {m.lossless for m in METHODS} == {True, False}  # the lossy rules are in the atlas too, labelled


def test_the_heads_on_the_targets_features_sit_side_by_side():
    """Medusa, EAGLE-1, EAGLE-3 and MTP all read the target's own features: the atlas lists them together,
    from their needs trait, wherever the registry puts them."""
    names = [m.drafter for m in METHODS if m.verification == "lossless"]
    family = [i for i, d in enumerate(names) if "heads" in drafter_class(d).needs]
    assert family == list(range(family[0], family[0] + len(family))) and len(family) >= 4
    assert sorted(atlas_order()) == sorted(DRAFTERS) and atlas_order()[0] == DRAFTERS[0]


def row(drafter, T, speedup, auto=False, verification="lossless"):
    return {"suite": "main", "impl": "specviz", "drafter": drafter, "temperature": T, "k": 4, "k_auto": auto,
            "verification": verification, "speedup": speedup, "acceptance_rate": 0.5, "tokens_per_forward": 2.0,
            "draft_cost": 0.1, "memory_mb": 3.0}  # fmt: skip


def test_atlas_rows_take_each_figure_from_the_methods_own_bench_row():
    rows = [row("trigram", 0.0, 1.5), row("trigram", 0.8, 1.2), row("trigram", 0.8, 1.3, auto=True),
            row("trigram", 0.8, 1.1, verification="block"), {**row("trigram", 0.0, 9.9), "suite": "vs-transformers"}]  # fmt: skip
    by_name = {r["method"]: r for r in atlas_rows(rows)}
    t = by_name["trigram"]
    assert (t["speedup T=0"], t["speedup T=0.8"], t["speedup auto T=0.8"], t["speedup auto T=0"]) == (
        1.5,
        1.2,
        1.3,
        None,
    )
    assert by_name["trigram (block)"]["speedup T=0.8"] == 1.1 and by_name["trigram (block)"]["speedup T=0"] is None
    assert by_name["bigram"]["speedup T=0"] is None  # no row: nothing made up
    assert bench_row(rows, METHODS[0], 0.0) is None
    # The page's tables: the figures at the temperature picked, short headers; the prose apart.
    figures = figures_frame(atlas_rows(rows), 0.8).set_index("method")
    assert figures.loc["trigram", ["speedup", "auto K", "α"]].tolist() == [1.2, 1.3, 0.5]
    assert figures_frame(atlas_rows(rows), 0.0).set_index("method").loc["trigram", "speedup"] == 1.5
    assert len(figures.columns) == 7 and all(len(c) <= 7 for c in figures.columns)
    assert list(sources_frame(atlas_rows(rows)).columns) == ["method", "lossless", "draft from", "paper"]


def test_held_bytes_counts_each_storage_once_and_skips_what_is_shared():
    a = torch.zeros(1000, dtype=torch.float64)  # 8000 bytes
    holder = type("Holder", (), {})()
    holder.x, holder.view, holder.more = a, a[10:], [a, {"k": np.zeros(500)}]  # a view shares a's storage
    n = held_bytes(holder)
    assert 8000 + 4000 <= n < 8000 + 4000 + 2000  # the tensor once, the array, and small Python overhead
    assert held_bytes(holder, exclude=(a,)) < 4000 + 2000 + 100


def test_a_drafter_holds_its_tables_and_not_the_target(target, tiny):
    prompt = target.tokenizer.encode("ROMEO:\n")
    mb = {d: drafter_megabytes(Generation(target, prompt, Settings(drafter=d), tiny.model))
          for d in ("none", "trigram", "layer-skip", "neural")}  # fmt: skip
    assert mb["none"] < 0.01 and mb["layer-skip"] < 0.1  # layer-skip drafts in the target's own cache
    assert 65**3 * 8 / 1e6 <= mb["trigram"] < 3  # the trigram counts, int64
    assert 0.5 < mb["neural"] < 5  # the tiny model's weights and cache
