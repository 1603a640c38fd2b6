"""The verification views: a block-verified round beside token-wise on the same draft, the draft
tree (node identity is the index: a sampled tree may repeat a token), the children of one node
tried in turn. On the pages, with the sidebar's verification and tree-sampling choices:
tests/app/test_verify_views_pages.py."""

import pytest
import torch

from specviz.charts import block, tries
from specviz.charts.draft_tree import draft_tree_figure
from specviz.charts.verdict import checks_frame, checks_view
from specviz.core.record import RoundRecord
from specviz.core.session import Session
from specviz.core.settings import Settings
from specviz.drafters.base import Draft
from specviz.teaching.exactness import rule_sentence
from specviz.verifiers import TokenWise, residual

VOCAB = "<a&b"  # markup characters as tokens: every label must reach the screen as text


def record(draft: Draft, verdict) -> RoundRecord:
    """A round record around a verdict, with a cache story that does not matter here."""
    return RoundRecord(0, 1, 0, False, 0, len(draft.tokens) + 1, len(verdict.path) + 1, [0], draft.tokens,
                       draft.parents, [0] + draft.depths, None, {}, verdict.checks, verdict.path, verdict.residual,
                       verdict.correction, verdict.bonus_p, verdict.bonus, verdict.emitted(draft), [], {},
                       verify_notes=verdict.notes, draft_sampling=draft.sampling)  # fmt: skip


@pytest.fixture(scope="module")
def duplicate_siblings() -> RoundRecord:
    """Three children of the root drawn from q with replacement, token 0 twice; the first rejected."""
    p = torch.tensor([[0.1, 0.2, 0.3, 0.4]] + [[0.25] * 4] * 3, dtype=torch.float64)
    q = torch.tensor([[0.7, 0.1, 0.1, 0.1]] * 3, dtype=torch.float64)
    draft = Draft([0, 0, 3], [-1, -1, -1], q, sampling="with-replacement")
    for seed in range(100):
        verdict = TokenWise().verify(draft, p, 1.0, torch.Generator().manual_seed(seed))
        if not verdict.checks[0].accepted:
            return record(draft, verdict)
    raise AssertionError("no seed rejects the first child")


def test_tries_table_follows_the_residual(duplicate_siblings):
    r = duplicate_siblings
    assert tries.multi_try_nodes(r) == [-1]
    frame = tries.tries_frame(r, VOCAB, -1)
    assert list(frame["try"]) == list(range(1, len(r.positions) + 1)) and len(frame) >= 2
    assert list(frame["node"]) == [p.node for p in r.positions][: len(frame)]  # the index, not the token
    assert list(frame["token"])[:2] == ["<", "<"]
    # The second copy of '<' is tried against the residual the first left: p('<') is 0 there.
    first = r.positions[0]
    left = residual(first.p, first.q)
    assert frame["p(x)"][1] == pytest.approx(float(left[0])) == 0.0 and frame["result"][1] == "rejected"
    assert frame["residual left"][0] == "b 0.50, & 0.33, a 0.17"
    assert frame["min(1, p/q)"][0] == pytest.approx(0.1 / 0.7)
    sentence = tries.tries_sentence(r, VOCAB, -1, r.draft_sampling)
    assert "with replacement" in sentence and "the root" in sentence


def test_draft_tree_keeps_duplicate_tokens_apart(duplicate_siblings):
    r = duplicate_siblings
    fig = draft_tree_figure(r, VOCAB, 1)
    nodes = [c[0] for t in fig.data if t.customdata is not None for c in t.customdata]
    assert sorted(nodes) == ["node 0", "node 1", "node 2", "root"]
    texts = [x for t in fig.data if t.text is not None for x in t.text]
    assert texts.count("&lt;") == 2 and "<" not in "".join(texts)  # plotly would read '<' as a tag
    ys = [y for t in fig.data if t.customdata is not None for y in t.y]
    assert len(set(ys)) == 4 - 1 + 1 - 1  # three leaves on their own rows, the root centred on the middle one


@pytest.fixture(scope="module")
def block_run(target):
    s = Session(target, target.tokenizer.encode("ROMEO:\n"), Settings(k=6, temperature=1.0, verification="block"))
    for _ in range(6):
        s.forward()
    return s


def test_block_table_is_both_rules_on_one_draft(block_run):
    vocab = block_run.generation.trace.vocab
    for r in block_run.rounds:
        if not r.draft_tokens:
            continue
        frame = block.block_frame(r, vocab)  # the block panel's table, at full width
        n = r.verify_notes
        assert set(block.VIEW) == set(frame.columns) and sum(v["width"] for v in block.VIEW.values()) <= 640
        checks = checks_frame(r, vocab)  # beside the text: what decided each position
        assert list(checks["h"]) == n["stops"] and list(checks["η"]) == n["etas"]
        assert list(checks["result"]).count("accepted") == n["tau"] and list(checks["p(x)"]) == list(frame["p(x)"])
        view = checks_view(r)
        assert set(view) >= set(checks.columns) and sum(view[c]["width"] for c in checks.columns) <= 300
        assert list(frame["w"]) == n["weights"] and list(frame["h"]) == n["stops"]
        assert list(frame["η"]) == n["etas"] and list(frame["block keeps"]).count("yes") == n["tau"]
        assert frame["P(tw keeps)"].sum() == pytest.approx(n["expected_accepted"]["lossless"])
        assert list(frame["min(1, p/q)"]) == [min(1.0, p.p_x / p.q_x) for p in r.positions]
        assert block.both_rules(r) == {**n["expected_accepted"], "tau": n["tau"]}
        fig = block.block_figure(r, vocab)
        assert (
            list(fig.data[2].y) == n["stops"]
            and f"{n['expected_accepted']['block']:.2f} block;" in fig.layout.title.text
        )


def test_rule_sentence_says_what_to_expect():
    assert "expected to pass" in rule_sentence("block")
    assert "LOSSY" in rule_sentence("nasd-seed") and "expected to fail" in rule_sentence("replacement-mismatch")
