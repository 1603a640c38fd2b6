"""FLy (Training-Free Loosely Speculative Decoding): the entropy gate, the deferred window, greedy
decoding exactly at T = 0, and the exactness lab calling it biased at T > 0 (on the real target:
tests/statistical/test_fly_real_target.py)."""

import math
from dataclasses import replace

import pytest
import torch
from conftest import GREEDY_TEXT, GREEDY_TOKENS

from specviz.core.engine import Generation
from specviz.core.sampling import Stream
from specviz.core.settings import Settings
from specviz.drafters.base import chain
from specviz.teaching.atlas import bias_rows, methods
from specviz.teaching.exactness import run_exactness, verdict
from specviz.verifiers import VERIFIERS, TokenWise, verifier_label
from specviz.verifiers.fly import FLy, entropy

UNSURE = torch.tensor([0.0, 0.4, 0.3, 0.3], dtype=torch.float64)  # H ~ 1.09 nats; token 0 always rejected
SURE = torch.tensor([0.0, 0.98, 0.01, 0.01], dtype=torch.float64)  # H ~ 0.11 nats
ONE = torch.tensor([0.0, 0.0, 1.0, 0.0], dtype=torch.float64)  # token 2 always accepted


def test_entropy_in_nats():
    assert entropy(torch.tensor([1.0, 0, 0], dtype=torch.float64)) == 0.0
    assert entropy(torch.full((4,), 0.25, dtype=torch.float64)) == pytest.approx(math.log(4))
    assert entropy(UNSURE) == pytest.approx(-(0.4 * math.log(0.4) + 0.6 * math.log(0.3)))


def test_a_rejection_where_the_target_is_unsure_is_kept_when_the_window_matches():
    # token 0 has p = 0: token-wise rejects it every time; FLy keeps it when W - 1 = 2 matches follow
    rows = torch.stack([UNSURE, ONE, ONE, ONE])
    v = FLy(0.3, 3).verify(chain([0, 2, 2]), rows, 1.0, Stream().manual_seed(0))
    assert v.path == [0, 1, 2] and v.notes["deferred"] == [0] and v.bonus is not None
    assert [c.accepted for c in v.checks] == [True, True, True] and v.checks[0].accept_prob == 0.0
    lossless = TokenWise().verify(chain([0, 2, 2]), rows, 1.0, Stream().manual_seed(0))
    assert lossless.path == [] and lossless.correction != 0  # the same draft, verified exactly


def test_no_deferral_where_the_target_is_sure_or_the_window_fails_or_runs_out():
    gen = Stream().manual_seed(0)
    fly = FLy(0.3, 3)
    sure = fly.verify(chain([0, 2, 2]), torch.stack([SURE, ONE, ONE, ONE]), 1.0, gen)  # H below theta
    assert sure.path == [] and sure.notes["deferred"] == [] and sure.correction != 0
    assert torch.allclose(sure.residual, SURE)  # p without the rejected token (p(0) = 0 already)
    miss = fly.verify(chain([0, 2, 0]), torch.stack([UNSURE, ONE, ONE, ONE]), 1.0, gen)  # a follower misses
    assert miss.path == [] and miss.notes["deferred"] == []
    short = fly.verify(chain([2, 0, 2]), torch.stack([ONE, UNSURE, ONE, ONE]), 1.0, gen)  # one follower, W - 1 = 2
    assert short.path == [0] and short.notes["deferred"] == [] and short.correction != 0
    assert FLy(2.0, 3).verify(chain([0, 2, 2]), torch.stack([UNSURE, ONE, ONE, ONE]), 1.0, gen).path == []


def test_greedy_fly_is_token_wise_on_one_hot_rows():
    """At T = 0 p is one-hot: its entropy is 0, the gate never opens, and FLy is token-wise."""
    p_rows = torch.nn.functional.one_hot(torch.tensor([2, 4, 1, 3, 0]), 5).double()
    for tokens in ([2, 4, 0, 3], [2, 4, 1, 3], [1, 4, 1, 3]):
        d = chain(tokens)
        want = TokenWise().verify(d, p_rows, 0.0, torch.Generator()).emitted(d)
        assert FLy(0.0, 2).verify(d, p_rows, 0.0, torch.Generator()).emitted(d) == want


def test_greedy_fly_equals_plain_greedy_decoding(target64, tiny64, greedy):
    prompt = target64.tokenizer.encode(GREEDY_TEXT)
    for k in (1, 4, 8):
        s = Settings(drafter="trigram", k=k, temperature=0, max_new_tokens=GREEDY_TOKENS, verification="fly",
                     fly_entropy=0.0, fly_window=2)  # fmt: skip
        run = Generation(target64, prompt, s, tiny64.model).run()
        assert run.tokens == greedy.tokens, f"FLy K={k} diverged from greedy"
        assert run.summary()["accepted"] > 0


def test_fly_is_labelled_lossy_and_in_the_atlas():
    assert not VERIFIERS["fly"].lossless and verifier_label("fly") == "fly (lossy)"
    rows = [m for m in methods() if m.verification == "fly"]
    assert rows and all(not m.lossless for m in rows)
    assert {m.verification for m in methods() if not m.lossless} >= {"fly", "typical", "nasd-seed"}
    with pytest.raises(ValueError, match="chains only"):
        Settings(drafter="trie", verification="fly").check()
    with pytest.raises(ValueError, match="FLy window must be between 2 and 32"):
        Settings(verification="fly", fly_window=1).check()


@pytest.mark.slow  # 1,500 speculative runs and their chi-square tests
@pytest.mark.parametrize("temperature, seed", [(1.0, 9200), (0.5, 9300)])
def test_exactness_lab_calls_fly_biased(tiny, temperature, seed):
    prompt = tiny.tokenizer.encode("the cat sat on the mat.\nthe cat sat on the")
    settings = Settings(drafter="trigram", k=3, temperature=temperature, seed=seed, verification="fly",
                        fly_window=2)  # fmt: skip
    res = run_exactness(tiny, prompt, settings, samples=1500)
    assert res.p_value < 0.001 and verdict(res, 0.001)[0] == "biased", res.p_value
    exact = run_exactness(tiny, prompt, replace(settings, verification="lossless"), samples=1500)
    assert exact.p_value >= 0.001 and res.tv_distance > exact.tv_distance


@pytest.mark.real_target
def test_the_atlas_bias_table_calls_fly_biased(target, tiny):
    """The atlas's bias row for FLy with its showcase drafter: the Exactness lab's verdict at T = 1."""
    fly = tuple(m for m in methods() if m.verification == "fly")
    (row,) = bias_rows(target, tiny.model, fly)
    assert row["method"] == "neural (fly)" and row["lossless"] == "LOSSY"
    assert row["verdict"] == "biased" and row["p-value"] < 0.001 and row["runs"] == 600


def test_gate_chart_tells_matched_kept_and_rejected_apart(tiny):
    """Over real rounds, the chart's outcome per checked position agrees with the verdict: kept
    positions are exactly the rule's deferred ones, and a rejected one ends the round."""
    from specviz.charts.fly import fly_figure, outcomes

    prompt = tiny.tokenizer.encode("the cat sat on the mat.\nthe cat sat on the")
    s = Settings(drafter="trigram", k=6, temperature=1.0, seed=3, verification="fly", fly_window=2, max_new_tokens=120)
    run = Generation(tiny, prompt, s).run()
    kept = 0
    for r in run.rounds:
        kinds = outcomes(r)
        assert [c.node for c, k in zip(r.positions, kinds, strict=True) if k == "kept (deferred)"] == r.verify_notes[
            "deferred"
        ]
        assert "rejected" not in kinds[:-1] and (kinds[-1:] == ["rejected"]) == (r.correction is not None)
        kept += kinds.count("kept (deferred)")
        if r.positions:
            fig = fly_figure(r, run.vocab)
            assert sum(len(d.x) for d in fig.data) == len(r.positions)
    assert kept > 0  # the run did defer some rejections
