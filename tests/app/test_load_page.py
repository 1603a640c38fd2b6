"""The page "Why does speculation get slower on a busy server?" in AppTest: the stored batch run's chart and
its closing paragraph in that run's numbers, one round of every sequence of the batch the slider sets, and
the K adaptive K chooses at each batch size."""

import json

from conftest import ROOT, open_page, rerun, shown

from specviz.adaptive.load import DECAY_LOADED, memory
from specviz.bench.batch import crossover
from specviz.teaching.load import batch_rows, closing


def test_the_load_page():
    at = open_page("pages/load.py", timeout=300)
    rows = batch_rows([json.loads(line) for line in (ROOT / "docs" / "bench.jsonl").read_text().splitlines()])
    assert rows, "the stored bench has batch rows"
    said = " ".join(shown(m.value) for m in at.markdown)
    assert shown(closing(rows).split(" So: ")[0]) in said  # the stored run's own numbers
    first = [r for r in rows if not r["k_auto"]][1]["drafter"]
    b = crossover(rows, first)
    assert (f"{first}: " in said) and (b is None or f"about B = {b:.0f}" in said)
    seqs, ks = at.dataframe[0].value, at.dataframe[1].value
    assert len(seqs) == 4 and list(ks["batch size B"]) == [1, 2, 4, 8, 16, 32, 64]
    # The busier the pass, the shallower the draft, as a trend: between two batch sizes K may rise by one, where
    # drafting at all got dearer but one more token did not (a ratio of gains: docs/notes/batch.md)
    k = list(ks["K chosen"])
    assert k[-1] <= k[0] and max(k[3:]) <= k[0]
    assert any(f"over about its last {memory(DECAY_LOADED)} rounds" in shown(c.value) for c in at.caption)  # memory
    at.slider(key="load_batch").set_value(9)
    rerun(at)
    seqs = at.dataframe[0].value
    carried = next(c.value for c in at.caption if "The one target pass carried" in c.value)
    assert len(seqs) == 9 and f"carried {int(seqs['rows sent'].sum())} rows for 9 sequence(s)" in carried
