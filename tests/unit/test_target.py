"""The seam for the target model (specviz/core/target.py): CachedModel has every member of TargetModel
with a compatible signature, and nothing that shows tokens assumes a token is one character: a trace
whose tokenizer's pieces are several characters long reads and charts as those pieces."""

import inspect
import json
import re

import pytest
import torch

from models.gpt import GPT, GPTConfig
from models.tokenizer import CharTokenizer
from specviz.charts.distributions import bonus_bars, label, label_text, pq_bars
from specviz.core.record import PositionRecord, RoundRecord, Trace
from specviz.core.target import TargetModel
from specviz.kernels.cached_model import CachedModel
from specviz.teaching.race import lane, race_html
from specviz.teaching.replay import round_heading
from specviz.teaching.text_view import text_html

PIECES = ["ab", " c", "\n"]  # a fake three-token vocabulary whose pieces are not one character each


def _members(protocol) -> tuple[dict, dict]:
    """(data members with their annotations, methods and properties by name) that ``protocol`` declares."""
    fields = dict(protocol.__annotations__)
    return fields, {n: v for n, v in vars(protocol).items() if not n.startswith("_") and n not in fields}


def _small_model() -> CachedModel:
    torch.manual_seed(0)
    return CachedModel(GPT(GPTConfig(block_size=16, vocab_size=11, n_layer=2, n_head=2, n_embd=8)).eval())


def test_cached_model_has_every_member_of_the_interface():
    fields, methods = _members(TargetModel)
    assert sorted(fields) == ["block_size", "dtype", "n_embd", "n_layer", "start", "vocab_size"]
    assert sorted(methods) == ["capture", "copy_from", "features", "first_layers", "forward", "head", "held", "keep",
                               "length", "sync", "trim_missing"]  # fmt: skip
    lm = _small_model()
    kinds = {int: int, torch.dtype: torch.dtype}
    for name, kind in fields.items():
        assert isinstance(getattr(lm, name), kinds[kind]), name
    assert (lm.vocab_size, lm.n_layer, lm.n_embd, lm.block_size, lm.dtype) == (11, 2, 8, 16, torch.float32)
    for name, member in methods.items():
        impl = inspect.getattr_static(CachedModel, name)
        if isinstance(member, property):
            assert isinstance(impl, property), f"{name}: a property in the interface"
            continue
        want, got = inspect.signature(member).parameters, inspect.signature(impl).parameters
        for p in want.values():  # every parameter the interface names, by the same name, kind and default
            assert p.name in got, f"{name}: no parameter {p.name}"
            q = got[p.name]
            assert (q.kind, q.default) == (p.kind, p.default), f"{name}({p.name})"
        extra = [q for n, q in got.items() if n not in want]
        assert all(q.default is not inspect.Parameter.empty for q in extra), f"{name}: extra parameters need defaults"
        assert list(got)[: len(want)] == list(want), f"{name}: parameters in the interface's order"


def test_first_layers_and_head_are_the_forward_pass_when_every_layer_runs():
    """Layer-skip's draft pass through all the layers is the verify pass, bit for bit."""
    lm = _small_model()
    context = [1, 2, 3, 4, 5]
    lm.sync(context)
    P = lm.length
    want = lm.forward([5, 6, 7], [P, P + 1, P + 2])  # (3, V)
    got = lm.head(lm.first_layers([5, 6, 7], [P, P + 1, P + 2], P, lm.n_layer))  # (3, V)
    assert torch.equal(got, want)
    assert lm.model in lm.held() and any(t.data_ptr() == lm.kv_buf.data_ptr() for t in lm.held()[2:4])


def _round(emitted: list[int], V: int) -> RoundRecord:
    """A chain of one accepted draft token, then a bonus."""
    p = torch.full((V,), 1.0 / V, dtype=torch.float64)
    q = torch.nn.functional.one_hot(torch.tensor(emitted[0]), V).double()
    pos = PositionRecord(0, 1, emitted[0], 1.0, p[emitted[0]].item(), 1 / V, 1 / V, 0.1, True, None, q, p)
    return RoundRecord(index=0, context_len=2, window_start=0, reprefill=False, kv_before=1, kv_after_verify=3,
                       kv_after_trim=3, kv_kept=[1, 2], draft_tokens=[emitted[0]], draft_parents=[-1],
                       draft_positions=[1, 2], tree_mask=None, draft_notes={}, positions=[pos], accepted_path=[0],
                       residual=None, correction=None, bonus_p=p, bonus=emitted[1], emitted=emitted,
                       emitted_kinds=["accepted", "bonus"], drafter_update={})  # fmt: skip


def test_a_trace_with_multi_character_pieces_reads_and_charts_as_its_pieces():
    trace = Trace({"drafter": "none"}, PIECES, [0, 2], [_round([1, 0], len(PIECES))])
    assert trace.text == " cab" and trace.to_dict()["vocab"] == PIECES
    assert trace.rounds_frame()["text"].tolist() == [" cab"]
    assert [label(PIECES, t) for t in range(3)] == ["ab", "\u2423c", "\u21b5"]
    assert label_text(PIECES, [0, 1, 2]) == "ab\u2423c\u21b5"
    # The charts' categories are the pieces' labels, one per token, and a bar for the rest (none left here).
    bars = pq_bars(trace.rounds[0].positions[0], PIECES)
    assert set(bars.data[0].x[:-1]) == {"ab", "\u2423c", "\u21b5"} and bars.data[0].x[-1] == "the rest"
    assert bars.data[0].y[-1] == pytest.approx(0.0, abs=1e-12)
    assert set(bonus_bars(trace.rounds[0], PIECES).data[0].x) == {"ab", "\u2423c", "\u21b5", "the rest"}
    # One span per token, holding its whole piece, its space and newline marked and its id in the hover.
    page = text_html(trace, 1)
    assert ">ab<" in page and ">\u00b7c<" in page and "\u21b5\n<" in page and "· id 1" in page
    # The race's lanes carry one piece per token into their script, which shows token i as pieces[i].
    ln = lane(trace, "x")
    assert ln.pieces == [" c", "ab"] and ln.chars == " cab"
    data = json.loads(re.search(r"const D = (.*);\n", race_html("p", ln, ln)).group(1))
    assert data["lanes"][0]["pieces"] == [" c", "ab"] and "L.pieces[shown[i]]" in race_html("p", ln, ln)
    assert round_heading(trace.rounds[0], PIECES, 1).endswith("emitted ' cab'")


def test_the_character_tokenizer_gives_one_character_pieces():
    tok = CharTokenizer.from_text("hello, world\n")
    assert tok.pieces == list(tok.chars) and tok.piece(tok.encode("w")[0]) == "w"
    assert "".join(tok.piece(t) for t in tok.encode("hello")) == tok.decode(tok.encode("hello")) == "hello"
