"""Adaptive K under load (specviz/adaptive/load.py): a batch's prices from the roofline, the lone sequence's
prices unchanged at B = 1, K falling to 0 where a batch's pass is bound by arithmetic, and the output still
plain decoding's at T = 0 (K is fixed before each draft, from the batch size and past rounds only)."""

import pytest
from conftest import GREEDY_TEXT

from specviz.adaptive.costs import REFERENCE
from specviz.adaptive.load import LoadCosts
from specviz.bench.batch import run_batch_bench
from specviz.core.batch import Batch
from specviz.core.engine import Generation
from specviz.core.settings import Settings


def ridge16(rows: int, seqs: int) -> float:
    """A pass bound by reading the weights up to 16 rows, by arithmetic past them."""
    return max(1.0, rows / 16)


def ridge4(rows: int, seqs: int) -> float:
    """A pass bound by arithmetic past 4 rows: a batch of 8 is already there."""
    return max(1.0, rows / 4)


def test_prices_alone_are_the_lone_curve_and_grow_with_the_batch():
    load = LoadCosts(REFERENCE, ridge16)
    assert load.at(1) == (REFERENCE, 1.0)
    v4, s4 = load.at(4)
    v64, s64 = load.at(64)
    assert v4.v(1) == v64.v(1) == 1.0
    assert v4.v(4) == pytest.approx(REFERENCE.v(4))  # 16 rows: still memory-bound
    assert v64.v(5) == pytest.approx(REFERENCE.v(5) * 5)  # 320 rows against 64: five times the arithmetic
    assert s4 == 4 and s64 == pytest.approx(64 / 4)  # drafting against a share of the pass: 1/B of it, then less
    assert load.at(64) is load.at(64) or load.at(64)[0] is v64  # kept per B: adaptive K's cache key


def requests(target, n, k_auto=True):
    return [(target.tokenizer.encode(GREEDY_TEXT[: 60 + 17 * i]),
             Settings(drafter="distilled", k=8, k_auto=k_auto, temperature=0, max_new_tokens=40, seed=i))
            for i in range(n)]  # fmt: skip


def test_k_falls_to_zero_under_load_and_the_output_stays_exact(target):
    reqs = requests(target, 8)
    plain = [Generation(target, p, Settings(drafter="none", temperature=0, max_new_tokens=40)).run().tokens
             for p, _ in reqs]  # fmt: skip
    ks = {}
    for name, load in (
        ("alone", None),
        ("ridge16", LoadCosts(REFERENCE, ridge16)),
        ("ridge4", LoadCosts(REFERENCE, ridge4)),
    ):
        traces = Batch([Generation(target, p, s) for p, s in reqs], load).run()
        assert [t.tokens for t in traces] == plain  # lossless at T = 0 whatever the prices
        ks[name] = [r.k_choice.k for t in traces for r in t.rounds]
    assert sum(ks["alone"]) / len(ks["alone"]) > 2  # alone, the distilled chain drafts deep
    # 8 sequences x 2 rows fill the 16 rows a pass reads the weights for: K = 1 rides free, deeper K costs
    mean = {name: sum(k) / len(k) for name, k in ks.items()}
    assert mean["ridge16"] < mean["alone"] / 2 and ks["ridge16"].count(1) > len(ks["ridge16"]) / 2
    assert ks["ridge4"].count(0) > len(ks["ridge4"]) * 0.9  # every extra row costs its weight: plain decoding
    one = Batch([Generation(target, *reqs[0])], LoadCosts(REFERENCE, ridge16)).run()[0]
    assert one.tokens == plain[0] and [r.k_choice.k for r in one.rounds] == [
        r.k_choice.k for r in Generation(target, *reqs[0]).run().rounds
    ]  # a batch of one chooses what the lone sequence chooses


def test_the_bench_runs_adaptive_rows_priced_for_the_load(target, tiny):
    rows = run_batch_bench(target, tiny, batches=(1, 2), drafters=("trigram",), max_new_tokens=6, repeats=1,
                           load=LoadCosts(REFERENCE, ridge16))  # fmt: skip
    auto = [r for r in rows if r["k_auto"]]
    assert [r["batch"] for r in auto] == [1, 2] and all(r["same_as_baseline"] for r in auto)
    assert all(r["costs"].startswith("reference machine") for r in auto)


def test_the_page_numbers():
    """specviz/teaching/load.py: adaptive K's choice falls with the batch; the closing paragraph says each
    drafter's speedups and where it stopped paying, from the rows it is given."""
    from specviz.teaching.load import chosen_k, closing

    ks = chosen_k("distilled", 0.8, REFERENCE, ridge16, (1, 2, 4, 8, 16, 64))
    assert [b for b, _ in ks] == [1, 2, 4, 8, 16, 64] and ks[0][1] >= 4 and ks[-1][1] == 0
    assert all(a >= b for (_, a), (_, b) in zip(ks, ks[1:], strict=False))
    row = {"suite": "batch", "k_auto": False, "cpu": "a CPU", "date": "a date", "load_average": 8.0,
           "speedup_min": 0.0, "speedup_max": 9.0, "tokens_per_forward": 2.0}  # fmt: skip
    rows = [dict(row, drafter=d, batch=b, speedup=s, tokens_per_s=t) for d, b, s, t in
            [("none", 1, 1.0, 200), ("none", 8, 1.0, 900), ("trigram", 1, 1.5, 300), ("trigram", 8, 0.5, 450)]]  # fmt: skip
    text = closing(rows)
    assert (
        "from 200 to 900 tokens/s" in text
        and "trigram: 1.50× at B = 1, 0.50× at B = 8, stopped paying at about B = 3" in text
    )
