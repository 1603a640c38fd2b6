"""Records over a wide vocabulary (issue 42): p, q, the residual and the bonus kept as the top entries plus the
mass of the rest (record.TopRest), equal to the whole rows they came from, and the charts drawn from either.
The tiny Llama (tests/llm_models.py, 96 tokens) stands in for a wide vocabulary by lowering FULL_LIMIT."""

import pytest
import torch

from specviz.charts.distributions import REST, bonus_bars, pq_bars, residual_bars
from specviz.core import engine, record
from specviz.core.engine import Generation
from specviz.core.record import TopRest
from specviz.core.settings import Settings
from tests.llm_models import checkpoint

PROMPT = "First Citizen:\nBefore we proceed any further, hear me speak.\n"


def run(drafter: str, limit: int | None, monkeypatch) -> Generation:
    if limit is not None:
        monkeypatch.setattr(engine, "FULL_LIMIT", limit)
        monkeypatch.setattr(record, "FULL_LIMIT", limit)
    ck = checkpoint("llama")
    gen = Generation(ck, ck.tokenizer.encode(PROMPT), Settings(drafter=drafter, k=3, temperature=1.0, seed=3,
                                                              max_new_tokens=40))  # fmt: skip
    return gen.run() and gen


@pytest.mark.parametrize("drafter", ["bigram", "prompt-lookup"])
def test_top_k_and_rest_equal_the_whole_rows(drafter, monkeypatch):
    whole = run(drafter, None, pytest.MonkeyPatch()).trace
    kept = run(drafter, 32, monkeypatch).trace
    assert kept.tokens == whole.tokens  # compaction changes the record, never the run
    positions = residuals = bonuses = 0
    for rw, rk in zip(whole.rounds, kept.rounds, strict=True):
        for pw, pk in zip(rw.positions, rk.positions, strict=True):
            assert isinstance(pw.p, torch.Tensor) and isinstance(pk.p, TopRest) and isinstance(pk.q, TopRest)
            assert pk.p.ids == pk.q.ids and pk.p.ids[0] == pk.token and pk.p.size == 96
            for kept_row, row in ((pk.p, pw.p), (pk.q, pw.q)):
                assert kept_row.probs == pytest.approx(row[kept_row.ids].tolist(), abs=1e-12)
                assert sum(kept_row.probs) + kept_row.rest == pytest.approx(1.0, abs=1e-9)
                assert kept_row.rest == pytest.approx(float(row.sum()) - float(row[kept_row.ids].sum()), abs=1e-12)
                top = torch.topk(row, record.TOP_K).indices.tolist()
                assert set(top) <= set(kept_row.ids)  # the largest entries are all kept
            assert pk.p.overlap == pytest.approx(float(torch.minimum(pw.p, pw.q).sum()), abs=1e-12)
            positions += 1
        for name, drawn in (("residual", rk.correction), ("bonus_p", rk.bonus)):
            row, kept_row = getattr(rw, name), getattr(rk, name)
            if row is not None:
                assert kept_row.ids[0] == drawn and kept_row[drawn] == pytest.approx(float(row[drawn]), abs=1e-12)
                assert sum(kept_row.probs) + kept_row.rest == pytest.approx(1.0, abs=1e-9)
                residuals += name == "residual"
                bonuses += name == "bonus_p"
    assert positions and bonuses and (residuals or drafter == "prompt-lookup")
    assert '"rest"' in kept.to_json()  # the export keeps them as plain numbers


def test_charts_take_either_and_the_rest_bar_is_one_minus_the_shown(monkeypatch):
    whole = run("bigram", None, pytest.MonkeyPatch()).trace
    kept = run("bigram", 32, monkeypatch).trace
    vocab = kept.vocab
    charts = 0
    for rw, rk in zip(whole.rounds, kept.rounds, strict=True):
        for pw, pk in zip(rw.positions, rk.positions, strict=True):
            a, b = pq_bars(pw, vocab), pq_bars(pk, vocab)
            for fig in (a, b):
                p_bar, q_bar = fig.data[0], fig.data[1]
                assert p_bar.x[-1] == REST and len(p_bar.x) == 13
                assert p_bar.y[-1] == pytest.approx(1 - sum(p_bar.y[:-1]), abs=1e-12)
                assert q_bar.y[-1] == pytest.approx(max(0.0, 1 - sum(q_bar.y[:-1])), abs=1e-12)
            assert list(a.data[0].x) == list(b.data[0].x)  # the same tokens from the whole row and the kept one
            assert a.data[0].y == pytest.approx(b.data[0].y, abs=1e-12)
            assert a.layout.title.text == b.layout.title.text  # Σ min(p, q) over the whole vocabulary in both
            charts += 1
        if rk.residual is not None:
            assert residual_bars(rk, vocab).data[0].x[-1] == REST
        if rk.bonus_p is not None:
            assert bonus_bars(rk, vocab).data[0].y == pytest.approx(bonus_bars(rw, vocab).data[0].y, abs=1e-12)
    assert charts > 5


def test_the_character_models_records_and_charts_are_unchanged(target):
    gen = Generation(target, target.tokenizer.encode("ROMEO:\n"), Settings(k=3, max_new_tokens=12))
    trace = gen.run()
    pos = next(p for r in trace.rounds for p in r.positions)
    assert isinstance(pos.p, torch.Tensor) and pos.p.numel() == 65  # whole rows
    assert REST not in pq_bars(pos, trace.vocab).data[0].x  # no bar for the rest on characters
