"""The distilled table: built from the target's own outputs (checked by brute force on a slice),
reproducible, resumable, paired to its target; the drafters' drafts are well formed, and greedy
decoding with them (every K, and adaptive K) equals the baseline."""

import hashlib
import json
from pathlib import Path

import pytest
import torch
from conftest import ROOT

from models.checkpoint import checkpoint_path
from models.distilled import DEFAULT_PATH, DistilledError, DistilledTable, context_key, load_table
from specviz.core.engine import IDLE, STOPPED_AT_ONCE, Generation
from specviz.core.sampling import Stream, draw, scale_probs
from specviz.core.settings import Settings
from specviz.drafters.distilled import TREE_CHILDREN, DistilledDrafter, DistilledTreeDrafter
from specviz.training import distill

CORPUS = ROOT.parent / "shared" / "data" / "tinyshakespeare.txt"
SLICE = 3000  # training characters: a few seconds of target passes
needs_corpus = pytest.mark.skipif(not CORPUS.is_file(), reason="the corpus ../shared/data is not beside the checkout")


def build(tmp_path: Path, name: str, cfg: distill.DistillConfig | None = None) -> Path:
    cfg = cfg or distill.DistillConfig(limit_chars=SLICE, chunk_windows=4)
    out = tmp_path / f"{name}.safetensors"
    distill.build("target", CORPUS, out, cfg, tmp_path / "resume", "test")
    return out


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@needs_corpus
def test_rows_are_the_targets_own_averages(tmp_path, target):
    """Every kept context's row against a brute-force pass over the same positions."""
    out = build(tmp_path, "a")
    table = DistilledTable(out, checkpoint_path("target"))
    ids = torch.tensor(target.tokenizer.encode(CORPUS.read_text()[:SLICE]))
    starts = distill.window_starts(len(ids), target.config.block_size)
    probs, argmax = distill.target_outputs(target.model, ids, starts, batch=8)
    V, seq = target.config.vocab_size, ids.tolist()
    checked = 0
    for t in (100, 777, 2999):  # a few positions, every context length ending there
        for L in range(0, 9):
            key = context_key(seq[: t + 1], L, V)
            same = [s for s in range(max(L - 1, 0), len(seq)) if seq[s - L + 1 : s + 1] == seq[t - L + 1 : t + 1]]
            row = table.row.get(key)
            if len(same) < 2:  # seen once: dropped (min_count 2)
                assert row is None
                continue
            mean = probs[same].double().mean(0)
            votes = torch.bincount(argmax[same].long(), minlength=V)
            assert table.counts[row] == len(same)
            assert table.mode[row] == int(votes.argmax())
            assert table.agreement(row) == pytest.approx(int(votes.max()) / len(same), abs=0.5 / 255)  # in 255ths
            top_t, top_p = table.top(row)
            assert top_t == mean.topk(len(top_t)).indices.tolist()
            assert top_p == pytest.approx(mean[top_t].tolist(), abs=1e-3)  # stored as float16
            assert table.q(row).sum().item() == pytest.approx(1.0, abs=1e-12)
            checked += 1
    assert checked >= 10


@needs_corpus
def test_a_build_is_reproducible_and_resumes(tmp_path, monkeypatch):
    first = build(tmp_path, "first")
    # Interrupt a second build after two chunks, then run it again: it resumes from the saved chunks.
    calls, real = [], distill.target_outputs

    def flaky(*args):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(distill, "target_outputs", flaky)
    with pytest.raises(KeyboardInterrupt):
        build(tmp_path, "second")
    assert len(list((tmp_path / "resume").glob("*/chunk-*.pt"))) == 2
    monkeypatch.setattr(distill, "target_outputs", real)
    second = build(tmp_path, "second")
    assert sha(first) == sha(second)
    assert json.loads(distill.build_path(second).read_text())["sha256"] == sha(second)


def test_the_shipped_table_belongs_to_the_shipped_target():
    table = load_table(checkpoint_path("target"))
    assert table.meta["target_sha256"] == hashlib.sha256(checkpoint_path("target").read_bytes()).hexdigest()
    assert DEFAULT_PATH.stat().st_size <= 15_000_000
    with pytest.raises(DistilledError, match="distilled from another target") as e:
        DistilledTable(DEFAULT_PATH, checkpoint_path("tiny"))
    assert "\n" not in str(e.value)


def test_a_damaged_table_is_one_line(tmp_path):
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(DEFAULT_PATH.read_bytes()[:1000])
    with pytest.raises(DistilledError, match="cannot load distilled table") as e:
        DistilledTable(bad, checkpoint_path("target"))
    assert "\n" not in str(e.value)


def test_a_bit_flipped_table_is_refused(tmp_path):
    """The shipped table is checked against models/SHA256SUMS before it is read."""
    copy = tmp_path / DEFAULT_PATH.name
    data = bytearray(DEFAULT_PATH.read_bytes())
    data[len(data) // 2] ^= 1  # one bit, deep inside a tensor: the file still parses
    copy.write_bytes(bytes(data))
    (tmp_path / "SHA256SUMS").write_text((DEFAULT_PATH.parent / "SHA256SUMS").read_text())
    with pytest.raises(DistilledError, match="sha256") as e:
        DistilledTable(copy, checkpoint_path("target"))
    assert "\n" not in str(e.value)


def test_lookup_backs_off_to_the_longest_context_seen_often_enough():
    table = load_table(checkpoint_path("target"))
    seq = [table.vocab.index(c) for c in "ROMEO:\nBut soft"]
    row, L = table.lookup(seq, 2)
    assert L >= 4 and table.counts[row] >= 2
    row_strict, L_strict = table.lookup(seq, table.counts[row] + 1)  # that context is no longer enough
    assert L_strict < L and table.counts[row_strict] > table.counts[row]
    assert table.lookup([], 2) == (table.row[0], 0)  # the empty context: the unigram


def test_lookup_is_the_longest_context_seen_often_enough_by_definition():
    """lookup against the definition, literally: every length, the longest whose context the table
    holds with count >= min_count, on corpus text, invented text and every min_count that matters."""
    table = load_table(checkpoint_path("target"))
    texts = ["ROMEO:\nBut soft, what light", "First Citizen:\nBefore we proceed", "zzqx!!? QQ", "the the the "]
    for text in texts:
        ids = [table.vocab.index(c) for c in text]
        for end in range(len(ids) + 1):
            seq = ids[:end]
            for min_count in (0, 1, 2, 3, 10, 1000, 10**9):
                want = (table.row[0], 0)
                for L in range(1, min(table.max_context, len(seq)) + 1):
                    r = table.row.get(context_key(seq, L, table.V))
                    if r is not None and table.counts[r] >= min_count:
                        want = (r, L)
                assert table.lookup(seq, min_count) == want


def test_keys_extended_a_token_at_a_time_are_the_keys_of_the_longer_sequence():
    """A drafter walks its chain with extend(); it must land on the keys (so the rows) that keys()
    and context_key give the whole sequence, at every length cap, from short and long starts."""
    table = load_table(checkpoint_path("target"))
    ids = [table.vocab.index(c) for c in "ROMEO:\nBut soft, what light through yonder"]
    for n in range(table.max_context + 1):
        for start in (0, 3, 12):
            keys = table.keys(ids[:start][-n:] if n else [])
            for end in range(start, len(ids)):
                seq = ids[: end + 1]
                keys = table.extend(keys, ids[end], n)
                assert keys == (table.keys(seq[-n:]) if n else [])
                assert keys == [context_key(seq, L, table.V) for L in range(1, min(n, len(seq)) + 1)]


def test_a_rows_q_is_its_top_k_and_even_rest_scaled_like_the_target():
    table = load_table(checkpoint_path("target"))
    for row in (0, 1, 777, len(table) // 2, len(table) - 1):
        top_t, top_p = torch.from_numpy(table.top_tokens[row]), torch.from_numpy(table.top_probs[row])
        q = torch.full((table.V,), (1 - float(top_p.sum())) / (table.V - len(top_t)), dtype=torch.float64)
        q[top_t] = top_p  # the row as stored: its top_k, the rest of the mass spread evenly
        assert torch.allclose(table.q(row), q / q.sum(), rtol=0, atol=1e-12)
        for T in (0.05, 0.5, 0.8, 1.0, 1.7):
            got = torch.tensor(table.probs(row, T), dtype=torch.float64)
            assert torch.allclose(got, scale_probs(q / q.sum(), T), rtol=0, atol=1e-12)


def test_a_sampled_draft_hands_the_verifier_the_q_it_drew_from(target):
    table = load_table(checkpoint_path("target"))
    ids = target.tokenizer.encode("ROMEO:\nBut soft, what light")
    for seed, T in ((0, 0.5), (1, 0.8), (2, 1.0)):
        d = DistilledDrafter(table).draft(ids, 8, T, Stream().manual_seed(seed))
        assert d.q.shape == (8, table.V) and d.q.dtype == torch.float64
        replay, seq = Stream().manual_seed(seed), list(ids)
        for i, tok in enumerate(d.tokens):
            assert d.q[i].tolist() == table.probs(table.lookup(seq[-8:], 2)[0], T)  # the row of its context
            assert draw(d.q[i], replay) == tok  # and the same uniform draws the same token from it
            seq.append(tok)


def test_the_tree_is_well_formed(target):
    table = load_table(checkpoint_path("target"))
    ids = target.tokenizer.encode("ROMEO:\nBut soft, what light")
    for k, nodes in ((1, 16), (4, 16), (8, 5), (3, 40)):
        d = DistilledTreeDrafter(table, nodes=nodes).draft(ids, k, 0.0, torch.Generator())
        assert 0 < len(d.tokens) <= nodes and max(d.depths) <= k and d.q is None
        kids: dict[int, list[int]] = {}
        for i, p in enumerate(d.parents):
            assert p < i  # parents first: depth-first order
            kids.setdefault(p, []).append(d.tokens[i])
        for siblings in kids.values():
            assert len(set(siblings)) == len(siblings) <= TREE_CHILDREN
        assert d.tokens[0] == table.mode[table.lookup(ids[-8:], 2)[0]]  # the first child is the target's mode


@pytest.mark.parametrize("drafter", ["distilled", "distilled-tree"])
def test_greedy_with_adaptive_k_equals_the_baseline(target, drafter):
    prompt = target.tokenizer.encode("ROMEO:\nBut soft, what light through yonder window breaks?\n")
    base = Generation(target, prompt, Settings(drafter="none", temperature=0, max_new_tokens=300)).run()
    auto = Generation(target, prompt, Settings(drafter=drafter, k=12, k_auto=True, temperature=0,
                                               max_new_tokens=300)).run()  # fmt: skip
    assert auto.tokens == base.tokens
    assert sum(r.reprefill for r in auto.rounds) >= 1  # 300 tokens past the window
    chosen = {r.k_choice.k for r in auto.rounds}
    assert max(chosen) > 4  # a confident drafter drafts deep


def test_at_t0_adaptive_k_weighs_each_character_by_the_tables_agreement_before_drafting_it(target):
    """At T = 0 adaptive K stops the distilled chain token by token (adaptive.Stopper): each estimate it
    weighed is the agreement of the row the next character was drafted from, known before drawing it."""
    prompt = target.tokenizer.encode("ROMEO:\nBut soft, what light through yonder window breaks?\n")
    gen = Generation(target, prompt, Settings(drafter="distilled", k=12, k_auto=True, temperature=0,
                                              max_new_tokens=150))  # fmt: skip
    assert gen.stops and not Generation(target, prompt, Settings(drafter="distilled", k=12, k_auto=True,
                                                                 temperature=0.8)).stops  # fmt: skip
    trace, drafter = gen.run(), gen.drafter
    text = trace.prompt + trace.tokens  # the prompt, then what the rounds emitted
    for r in trace.rounds:
        c, context = r.k_choice, text[: r.context_len]
        assert c.k == len(r.draft_tokens) and len(c.estimates) in (c.k, c.k + 1)
        if not c.k:  # stopped before the first character, or no room for one (the last round: not asked)
            assert r.draft_notes["adaptive K"] == (STOPPED_AT_ONCE if c.estimates else IDLE)
        for i, a in enumerate(c.estimates):
            assert a == drafter.table.agreement(drafter.lookup(context + r.draft_tokens[:i])[0])
    one = Generation(target, prompt, Settings(drafter="distilled", k=12, k_auto=True, temperature=0,
                                              max_new_tokens=1)).step()  # fmt: skip  # room for no draft
    assert one.k_choice.k == 0 and not one.k_choice.estimates and one.draft_notes["adaptive K"] == IDLE
    stopped = [r for r in trace.rounds if len(r.k_choice.estimates) > r.k_choice.k]
    assert stopped and min(r.k_choice.estimates[-1] for r in stopped) < 0.5  # it stops before unsure characters
