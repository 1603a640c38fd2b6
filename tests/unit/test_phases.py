"""The round phase by phase (specviz/teaching/phases.py, ui/phase_view.py): every phase in order, each check
pointing at its candidate in the text, the charts and the KV ledger at the same moment."""

import html
import re

import pytest

from specviz.charts.kv import kv_ledger
from specviz.charts.phase import accept_test
from specviz.core.session import Session
from specviz.core.settings import Settings
from specviz.teaching.phases import round_phases
from specviz.teaching.text_view import text_body


def rounds_of(target, drafter: str, n: int = 20):
    s = Session(
        target,
        target.tokenizer.encode("ROMEO:\nWhat light through yonder window breaks?\n" * 3),
        Settings(drafter=drafter, k=4, temperature=0.8),
    )
    return s, [s.forward() for _ in range(n)]


@pytest.mark.parametrize("drafter", ["trigram", "trie"])  # a sampled chain, a deterministic tree
def test_phases_follow_the_round(target, drafter):
    s, rounds = rounds_of(target, drafter)
    vocab = s.generation.trace.vocab
    seen = set()
    for r in rounds:
        phases = round_phases(r, vocab)
        stages = [p.stage for p in phases]
        last = "residual" if r.correction is not None else "bonus"
        assert stages == ["draft", "verify"] + ["check"] * len(r.positions) + [last, "trim"]
        assert [p.check for p in phases if p.stage == "check"] == list(range(len(r.positions)))
        assert [p.kv_stage for p in phases] == sorted(p.kv_stage for p in phases) and phases[-1].kv_stage == 3
        for p in phases:
            body = text_body(s.generation.trace, r.number, p)
            focused = re.findall(r'class="[^"]*sv-focus[^"]*"[^>]*>([^<]*)<', body)
            if p.stage == "check":
                assert focused == [html.escape(vocab[r.positions[p.check].token].replace("\n", "\u21b5\n"))]
                accept_test(r.positions[p.check], vocab)
            elif p.stage in ("residual", "bonus"):
                assert focused == [html.escape(vocab[r.emitted[-1]].replace("\n", "\u21b5\n"))]
            else:
                assert focused == []
            shown = {y for t in kv_ledger(r, p.kv_stage).data for y in t.y}
            assert len(shown) == p.kv_stage  # before; + verify writes; + after trim
        seen.update(stages)
    assert seen == {"draft", "verify", "check", "residual", "bonus", "trim"}
