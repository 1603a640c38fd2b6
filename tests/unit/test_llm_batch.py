"""Batching a transformers model changes no output (specviz/llm/batched.py): on the tiny random Llama and GPT-2
models built in the test, in float64, one padded model call over several sequences (caches of different
lengths, chains, trees, single rows) gives each sequence its lone pass's logits (1e-10) and scratch; and each
sequence of a Batch produces what it produces alone, tokens at T = 0 and its seed's draws at T > 0, with its
cache equal to a fresh prefill after every round. (In float32 the padded pass may round apart from the lone
one in the last bits: the equality is asserted in float64.)"""

import pytest
import torch

from specviz.core.batch import Batch, forward_each
from specviz.core.engine import Generation
from specviz.core.settings import Settings
from specviz.drafters import drafter_names
from specviz.drafters.base import tree_mask
from specviz.llm.batched import batch_mask, forward_batch
from specviz.llm.target import HFTarget
from tests.llm_models import checkpoint, corpus_slice
from tests.unit.test_llm_target import KINDS, assert_cache_is_prefill, draft_model

TEXT = corpus_slice(2000)
DRAFTERS = drafter_names(bpe=True)  # chains and trees ("neural-tree", "suffix"), plain decoding among them
TREES = set(drafter_names(bpe=True, tree=True))
# Prompt characters, in turn: caches of different lengths; 355 and 400 (~245 and ~276 tokens) cross the tiny
# models' window (block_size 256) within the run, so window jumps happen inside the batch.
LENGTHS = (355, 40, 180, 90, 400, 12, 250, 130)


def test_the_mask_hides_padding_and_other_rows():
    tree = tree_mask([-1, 0, 0])  # (4, 4): the root and three nodes
    m = batch_mask([3, 0, 1], [torch.ones(1, 1, dtype=torch.bool), torch.ones(2, 2).tril().bool(), tree],
                   torch.float64)[:, 0] == 0  # (3, Tmax 4, Lmax 3 + 4): True where a row attends  # fmt: skip
    assert m.shape == (3, 4, 7)
    assert m[0, 0].tolist() == [True] * 3 + [True, False, False, False]  # its 3 entries and itself
    assert m[1, :2].tolist() == [[False] * 3 + [True, False, False, False], [False] * 3 + [True, True, False, False]]
    assert m[2, :, :3].tolist() == [[False, False, True]] * 4  # its one entry, none of the two padding ones
    assert torch.equal(m[2, :, 3:], tree)
    for i, n in ((0, 1), (1, 2)):  # padding rows see only themselves
        for r in range(n, 4):
            assert m[i, r].nonzero().flatten().tolist() == [3 + r]


@pytest.mark.parametrize("kind", KINDS)
def test_one_call_gives_each_sequence_its_lone_logits_and_scratch(kind):
    """forward_batch against one forward per sequence: an empty cache, caches of different lengths, a single row,
    a chain and a tree in one call; then keep, on both: the caches equal."""
    ck = checkpoint(kind)
    contexts = [ck.tokenizer.encode(TEXT[:n]) for n in (1, 60, 200, 30)]
    assert len({len(c) for c in contexts}) == 4
    tree = tree_mask([-1, 0, 0, 1])  # (5, 5)
    passes = [([7, 8, 9], None), ([7], None), ([7, 8, 9, 10, 11], tree), ([5, 6], None)]

    def targets():
        out = []
        for ctx in contexts:
            t = ck.target_model()
            t.sync(ctx)
            t.forward([3, 4], [t.length, t.length + 1])  # scratch a pass must drop first, as forward does
            out.append(t)
        return out

    def args(ts):
        return [(tok, list(range(t.length, t.length + len(tok))), m) for t, (tok, m) in zip(ts, passes, strict=True)]

    one, many = targets(), targets()
    together, apart = forward_batch(one, args(one)), forward_each(many, args(many))
    paths = ([0, 1], [0], [0, 2, 4], [0, 1])  # a tree's path gathered, chains' prefixes
    for a, b, t1, t2, path in zip(together, apart, one, many, paths, strict=True):
        assert a.shape == b.shape and a.dtype == torch.float64
        torch.testing.assert_close(a, b, rtol=0, atol=1e-10)
        assert t1._new == t2._new
        for l1, l2 in zip(t1.cache.layers, t2.cache.layers, strict=True):
            torch.testing.assert_close(l1.keys, l2.keys, rtol=0, atol=1e-10)
            torch.testing.assert_close(l1.values, l2.values, rtol=0, atol=1e-10)
        tokens = [7 + j for j in path]
        t1.keep(path, tokens)
        t2.keep(path, tokens)
        assert t1.cached == t2.cached
        for l1, l2 in zip(t1.cache.layers, t2.cache.layers, strict=True):
            torch.testing.assert_close(l1.keys, l2.keys, rtol=0, atol=1e-10)


def test_the_engine_finds_the_batched_pass():
    ck = checkpoint("llama")
    batch = Batch.of(ck, [(ck.tokenizer.encode(TEXT[:40]), Settings(drafter="none", max_new_tokens=2))] * 2)
    assert batch.forward is HFTarget.forward_batch is forward_batch


def requests(ck, B: int, temperature: float, new_tokens: int):
    """B requests: prompts of different lengths, a different drafter each (chains and trees), K from 2 to 5, each
    its own seed."""
    out, offset = [], {1: 3, 3: 4}.get(B, 0)  # B = 3: a chain and two trees; B = 8: every drafter
    for i in range(B):
        d = DRAFTERS[(offset + i) % len(DRAFTERS)]
        prompt = ck.tokenizer.encode(TEXT[: LENGTHS[i % len(LENGTHS)]])
        out.append((prompt, Settings(drafter=d, k=2 + i % 4, temperature=temperature, max_new_tokens=new_tokens,
                                     seed=100 + i, layer_skip_layers=1)))  # fmt: skip
    return out


def rounds(trace):
    return [(r.draft_tokens, r.draft_parents, r.accepted_path, r.emitted) for r in trace.rounds]


@pytest.mark.parametrize("temperature", [0.0, 1.0], ids=["T0", "T1"])
@pytest.mark.parametrize("B", [1, 3, 8])
@pytest.mark.parametrize("kind", KINDS)
def test_batched_equals_alone_and_the_cache_is_a_prefill_every_round(kind, B, temperature):
    ck = checkpoint(kind)
    reqs = requests(ck, B, temperature, new_tokens=24)
    if B > 1:
        assert {s.drafter for _, s in reqs} & TREES and {s.drafter for _, s in reqs} - TREES
    draft = draft_model(kind, "neural")  # the drafters that need one take it; the rest ignore it
    alone = [Generation(ck, p, s, draft).run() for p, s in reqs]
    batch = Batch.of(ck, reqs, draft)
    assert batch.forward is forward_batch
    while not batch.done:
        for g, r in zip(batch.generations, batch.step(), strict=True):
            if r is not None:
                assert_cache_is_prefill(ck, g.target, g.tokens)
    for (_, s), a, g in zip(reqs, alone, batch.generations, strict=True):
        assert g.trace.tokens == a.tokens, f"{s.drafter} at T={s.temperature} diverged inside the batch"
        assert rounds(g.trace) == rounds(a), f"{s.drafter} at T={s.temperature}: other draws inside the batch"
    assert batch.passes == max(len(a.rounds) for a in alone)  # one call a round for the whole batch
    if B == 8:
        assert any(r.reprefill and r.index for a in alone for r in a.rounds), "no window jump inside the run"
    if B > 1:
        assert max(batch.rows) > B, "no sequence drafted: the batch carried no speculative rows"
        assert len({len(p) for p, _ in reqs}) == B  # caches of different lengths


def test_the_batch_bench_on_a_real_model(capsys, tmp_path):
    """bench --batch --model: the rows carry the model's name, plain decoding and the word-piece drafters at each
    B, the same tokens as plain decoding (float64); the chart draws them as lines of their own, and the load
    page's own rows (the character model's) leave them out."""
    from specviz.bench.batch import crossover, llm_drafters
    from specviz.bench.rows import rows_from_jsonl
    from specviz.charts.batch import crossover_figure
    from specviz.cli.main import main
    from specviz.drafters import BASELINE
    from specviz.teaching.load import batch_rows
    from tests.llm_models import folder

    name, out = str(folder("llama")), tmp_path / "rows.jsonl"
    code = main(["bench", "--batch", "1,3", "--model", name, "--dtype", "float64", "--max-new-tokens", "6",
                 "--repeats", "1", "--out", str(out)])  # fmt: skip
    assert code in (0, None), capsys.readouterr().err
    rows = rows_from_jsonl(out.read_text())
    drafters = llm_drafters(4)
    assert set(drafters) == {"trigram", "prompt-lookup"}  # by their traits (bpe and under_load; a peer)
    assert [(r["batch"], r["drafter"]) for r in rows] == [(b, d) for b in (1, 3) for d in (BASELINE, *drafters)]
    for r in rows:
        assert r["model"] == name and r["suite"] == "batch" and not r["k_auto"]
        assert r["tokens"] == 6 * r["batch"] and r["same_as_baseline"] is True
        assert r["rows_per_pass"] > r["batch"] if r["drafter"] != BASELINE else r["rows_per_pass"] == r["batch"]
    char = [dict(r, model=None, speedup=2.0 / r["batch"]) for r in rows]  # a character model's run beside it
    fig = crossover_figure(rows + char)
    lines = [t.name for t in fig.data if t.mode == "lines+markers"]
    assert lines == [*drafters, *(f"{d} ({name})" for d in drafters)]
    looks = {(t.line.color, t.marker.symbol, t.line.dash) for t in fig.data if t.mode == "lines+markers"}
    assert len(looks) == len(lines)  # the same drafter on the two models: two lines told apart
    # each model's crossover from its own rows: 2.0 at B = 1 and 2/3 at 3 fall through 1 at B = 3 ** 0.75
    assert crossover(rows + char, "trigram") == pytest.approx(3**0.75)
    assert crossover(rows + char, "trigram", model=name) == crossover(rows, "trigram", model=name)
    assert batch_rows(rows + char) == char and len(batch_rows(rows + char, every_model=True)) == 12
