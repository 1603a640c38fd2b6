"""The engine is exactly right: greedy equals plain greedy decoding, the KV cache after every
round equals a fresh prefill, and the same seed gives the same trace. Float64 throughout."""

import pytest
import torch
from conftest import GREEDY_TEXT, GREEDY_TOKENS, assert_plain_greedy

from specviz.core.engine import Generation, verify_pass
from specviz.core.session import Session
from specviz.core.settings import Settings
from specviz.core.target import room, window_start
from specviz.drafters import drafter_class, drafter_names
from specviz.drafters.base import Draft
from specviz.kernels import native
from specviz.kernels.cached_model import CachedModel

DRAFTERS = drafter_names()
TREE_DRAFTERS = drafter_names(tree=True)

PROMPT = "ROMEO:\nBut soft, what light through yonder window breaks?\nROMEO:\nBut soft, what light"


@pytest.fixture
def target(target64):  # float64 throughout
    return target64


@pytest.fixture
def tiny(tiny64):
    return tiny64


def test_window_policy():
    assert [window_start(t, 256) for t in (0, 256, 257, 384, 385, 512, 513)] == [0, 0, 128, 128, 256, 256, 384]
    assert room(250, 256) == 6 and room(256, 256) == 0 and room(257, 256) == 127
    for t in range(1, 1000):  # the context seen for token t always fits in the block
        assert 0 < t - window_start(t, 256) <= 256


def test_baseline_equals_plain_greedy_decoding(target, greedy):
    """The KV-cached baseline against full forward passes with no cache at all, past block_size."""
    prompt = target.tokenizer.encode(GREEDY_TEXT)
    assert len(prompt) + len(greedy.tokens) > target.config.block_size
    assert sum(r.reprefill for r in greedy.rounds) >= 1
    assert assert_plain_greedy(target, prompt, greedy.tokens) >= 2  # the window jumped


@pytest.mark.parametrize(
    "drafter, verification",
    [(d, "lossless") for d in DRAFTERS if d != "none"]
    + [(d, "block") for d in DRAFTERS if d not in ("none", *TREE_DRAFTERS)]
    + [("trigram", "typical"), ("trie", "typical")]  # lossy at T > 0, greedy at T = 0
    + [(d, "traversal") for d in TREE_DRAFTERS],
)
def test_greedy_speculative_equals_baseline(target, tiny, greedy, drafter, verification):
    prompt = target.tokenizer.encode(GREEDY_TEXT)
    for k in (1, 4, 8):
        run = Generation(
            target,
            prompt,
            Settings(drafter=drafter, k=k, temperature=0, max_new_tokens=GREEDY_TOKENS, verification=verification),
            tiny.model,
        ).run()
        assert run.tokens == greedy.tokens, f"{drafter} ({verification}) K={k} diverged from greedy"
        assert run.summary()["accepted"] > 0  # the drafter did get tokens accepted
        assert sum(r.reprefill for r in run.rounds) >= 1


@torch.no_grad()
@pytest.mark.parametrize(
    "drafter, shape", [(d, "dynamic") for d in DRAFTERS] + [(d, "sequoia") for d in drafter_names(shaped=True)]
)
def test_cache_after_every_round_equals_fresh_prefill(target, tiny, drafter, shape):
    text = (PROMPT + "\n") * 4  # ~240 characters: the run crosses block_size
    prompt = target.tokenizer.encode(text)
    settings = Settings(drafter=drafter, k=5, temperature=1.0, max_new_tokens=60, seed=3, tree_shape=shape)
    gen = Generation(target, prompt, settings, tiny.model)
    while not gen.done:
        record = gen.step()
        kept = gen.tokens[record.window_start : -1]
        assert gen.target.cached == kept
        _, fresh = target.model(torch.tensor([kept]), torch.arange(len(kept)))
        assert gen.target.length == fresh.length == record.kv_after_trim
        for (k1, v1), (k2, v2) in zip(gen.target.kv_cache(), fresh.layers, strict=True):
            assert (k1 - k2).abs().max() < 1e-9 and (v1 - v2).abs().max() < 1e-9
        assert record.kv_after_trim == record.kv_before + 1 + record.n_accepted
        assert record.kv_after_verify == record.kv_before + 1 + len(record.draft_tokens) + len(record.extra_tokens)
    assert any(r.reprefill for r in gen.trace.rounds[1:])


def test_same_seed_same_trace(target, tiny):
    prompt = target.tokenizer.encode(PROMPT)
    for drafter in ("trigram", "trie", "neural", "neural-tree"):
        settings = Settings(drafter=drafter, k=4, temperature=0.9, max_new_tokens=50, seed=11)
        a = Generation(target, prompt, settings, tiny.model).run().to_json(timings=False)
        b = Generation(target, prompt, settings, tiny.model).run().to_json(timings=False)
        c = (
            Generation(target, prompt, Settings(**{**vars(settings), "seed": 12}), tiny.model)
            .run()
            .to_json(timings=False)
        )
        assert a == b and a != c


def test_record_frames_and_json(target):
    prompt = target.tokenizer.encode(PROMPT)
    trace = Generation(
        target, prompt, Settings(drafter="trigram", k=4, temperature=1.0, max_new_tokens=30, seed=1)
    ).run()
    rounds, positions = trace.rounds_frame(), trace.positions_frame()
    assert len(rounds) == len(trace.rounds) and rounds["emitted"].sum() == 30
    assert len(positions) == sum(len(r.positions) for r in trace.rounds)
    assert positions["accepted"].sum() == sum(r.n_accepted for r in trace.rounds)
    summary = trace.summary()
    # K = 4 each round, cut to what is left to generate in the last ones: never an overshoot
    assert [len(r.draft_tokens) for r in trace.rounds] == [
        min(4, 30 - (r.context_len - len(prompt)) - 1) for r in trace.rounds
    ]
    assert summary["drafted"] == sum(len(r.draft_tokens) for r in trace.rounds)
    assert summary["accepted"] <= summary["tried"] <= summary["drafted"]
    assert summary["acceptance_rate"] == summary["accepted"] / summary["tried"]
    r0 = trace.rounds[0]
    assert len(r0.positions[0].p) == len(r0.positions[0].q) == 65
    assert r0.draft_notes["positions"][0]["row"] in ("trigram", "bigram")
    assert trace.to_dict()["text"] == trace.text and len(trace.text) == 30


def test_session_steps_back_and_forth_without_recomputing(target):
    prompt = target.tokenizer.encode(PROMPT)
    sess = Session(target, prompt, Settings(drafter="bigram", k=3, temperature=1.0, max_new_tokens=20, seed=5))
    first = sess.forward()
    second = sess.forward()
    assert sess.cursor == 2 and len(sess.rounds) == 2
    assert sess.back() is first and len(sess.rounds) == 2
    assert sess.forward() is second and len(sess.rounds) == 2  # replayed, not recomputed
    assert sess.seek(0) is None and sess.seek(99) is second
    sess.run_to_end()
    assert sess.at_end and sum(len(r.emitted) for r in sess.rounds) == 20
    again = Session(target, prompt, sess.generation.settings, generation=sess.generation)  # a second reader
    assert again.cursor == 0 and again.forward() is first and again.rounds is sess.rounds


@pytest.mark.parametrize(
    "bad, message",
    [({"k": 0}, "K must be"), ({"temperature": -1}, "temperature"), ({"max_new_tokens": 5000}, "max new tokens"),
     ({"drafter": "gpt5"}, "unknown drafter"), ({"verification": "yolo"}, "unknown verification"),
     ({"drafter": "neural-tree", "tree_sampling": "both"}, "unknown tree sampling"),
     ({"drafter": "neural-tree", "verification": "block"}, "checks chains only"),
     ({"neural_tree_nodes": 65}, "node budget"), ({"neural_tree_children": 0}, "children per node")],
)  # fmt: skip
def test_bad_settings_are_refused(target, bad, message):
    with pytest.raises(ValueError, match=message):
        Generation(target, [1, 2], Settings(**bad))


def test_sessions_sharing_a_generation_compute_each_round_once(target):
    """A class on one server: sessions browse one generation, each with its own cursor; concurrent
    Next clicks compute every round exactly once and every session sees the unshared run's rounds."""
    import threading

    prompt = target.tokenizer.encode(PROMPT)
    settings = Settings(drafter="trigram", k=4, temperature=0.8, max_new_tokens=60, seed=11)
    alone = Generation(target, prompt, settings).run()
    shared = Generation(target, prompt, settings)
    sessions = [Session(target, prompt, settings, generation=shared) for _ in range(6)]
    steps = []
    shared_step = shared.step

    def counted_step():
        steps.append(1)
        return shared_step()

    shared.step = counted_step

    def click_through(session):
        while not session.at_end:
            session.forward()

    threads = [threading.Thread(target=click_through, args=(s,)) for s in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert len(steps) == len(shared.trace.rounds) == len(alone.rounds)  # each round computed once
    assert shared.trace.tokens == alone.tokens
    assert all(s.cursor == len(alone.rounds) for s in sessions)
    late = Session(target, prompt, settings, generation=shared)  # a student who joins later starts at the prompt
    assert late.cursor == 0 and late.forward() is shared.trace.rounds[0] and len(steps) == len(alone.rounds)


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit for bit on the kernels; within float64 rounding on torch alone (its blocked products)."""
    return torch.equal(a, b) if native.kernel() else float((a - b).abs().max()) < 1e-10


@torch.no_grad()
@pytest.mark.parametrize("parents", [[-1, 0, 1, 2], [-1, -1, 0, 1, 0]], ids=["chain", "tree"])
def test_a_prefill_round_runs_one_pass_with_the_rows_of_two(target, parents, monkeypatch):
    """A round whose cache lacks context (round 0, a window jump) runs that context and the draft in one
    target pass, and the root's and nodes' logits and the cache it leaves are those of a prefill and a
    verify pass run apart (every row of the kernels depends only on the entries it sees)."""
    context = target.tokenizer.encode(PROMPT)
    draft = Draft(tokens=[5, 6, 7, 8, 9][: len(parents)], parents=parents)
    merged, apart = CachedModel(target.model), CachedModel(target.model)
    apart.sync(context)
    moved, prefix = merged.trim_missing(context)
    assert prefix == context[:-1] and merged.length == 0
    one, two = verify_pass(merged, context[-1], draft, prefix), verify_pass(apart, context[-1], draft)
    assert one[2] == two[2] and same(one[0], two[0])  # the same positions, the same logits
    merged.keep([*range(len(prefix) + 2)], [*prefix, context[-1], draft.tokens[0]])  # the root and the first node
    apart.keep([0, 1], [context[-1], draft.tokens[0]])
    assert merged.cached == apart.cached
    for (k1, v1), (k2, v2) in zip(merged.kv_cache(), apart.kv_cache(), strict=True):
        assert same(k1, k2) and same(v1, v2)

    passes, forward = [], CachedModel.forward
    monkeypatch.setattr(CachedModel, "forward", lambda self, *a, **k: passes.append(1) or forward(self, *a, **k))
    gen = Generation(target, context, Settings(drafter="trigram", k=4, temperature=0.0, max_new_tokens=2))
    record = gen.step()  # round 0: the prompt's prefill and the first draft
    assert len(passes) == 1 and record.kv_before == len(context) - 1 == record.kv_after_trim - 1 - record.n_accepted


@torch.no_grad()
@pytest.mark.parametrize("drafter", [d for d in DRAFTERS if "target_cache" in drafter_class(d).needs])
def test_no_target_pass_runs_inside_a_draft(target, tiny, drafter, monkeypatch):
    """A drafter that reads the target's cache finds it whole: round 0's prefill runs before the draft's
    clock starts, and counts as the verify pass's time (plain decoding's prefill does), so that a drafter's
    measured cost is its own work. Over rounds 0..3 and a window jump, no full target pass runs inside a draft."""
    inside, forward, draft = [], CachedModel.forward, drafter_class(drafter).draft
    drafting = {"now": False}

    def timed_draft(self, *a, **k):
        drafting["now"] = True
        try:
            return draft(self, *a, **k)
        finally:
            drafting["now"] = False

    monkeypatch.setattr(drafter_class(drafter), "draft", timed_draft)
    monkeypatch.setattr(CachedModel, "forward", lambda self, *a, **k: inside.append(drafting["now"]) or
                        forward(self, *a, **k))  # fmt: skip
    prompt = target.tokenizer.encode(PROMPT * 3)[:250]  # a window jump within the run
    gen = Generation(target, prompt, Settings(drafter=drafter, k=4, temperature=0.0, max_new_tokens=24), tiny.model)
    records = [gen.step() for _ in range(4)]
    gen.run()
    assert inside and not any(inside), f"{sum(inside)} of {len(inside)} target passes ran inside a draft"
    assert records[0].prefilled == len(prompt) - 1 and gen.target.start > 0  # the prompt, read as verify; a jump
