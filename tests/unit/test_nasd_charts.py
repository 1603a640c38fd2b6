"""The NASD page's numbers: the storage replay agrees with the drafter, and the charts hold the
rounds' additions and drafts. The page itself: tests/app/test_nasd_page.py (AppTest, with its
knobs) and tests/browser/test_nasd_page_browser.py."""

from types import SimpleNamespace

import pytest
import torch

from models.checkpoint import load_checkpoint
from specviz.charts import nasd as charts
from specviz.core.session import Session
from specviz.core.settings import Settings
from specviz.drafters.nasd import NASDDrafter
from specviz.teaching.presets import preset


@pytest.fixture(scope="module")
def run():
    target = load_checkpoint("target")
    prompt = target.tokenizer.encode(preset("Quote a passage").text)
    session = Session(target, prompt, Settings(drafter="nasd", nasd_filler_top_k=3, max_new_tokens=80), None)
    session.run_to_end()
    return session


def by_source(r, source):
    return sum(a["source"] == source for a in r.drafter_update["added"])


def test_replay_agrees_with_the_drafter(run):
    states = charts.storage_growth(run.generation.drafter.rows(), run.rounds)
    assert len(states) == len(run.rounds) + 1
    first = run.rounds[0].draft_notes["storage"]
    assert (states[0]["contexts"], states[0]["entries"]["prompt"]) == (first["contexts"], first["entries"])
    assert set(states[0]["entries"]) == {"prompt"}
    for before, after, r in zip(states[:-1], states[1:], run.rounds, strict=True):
        size = r.drafter_update["storage"]
        assert (after["contexts"], sum(after["entries"].values())) == (size["contexts"], size["entries"])
        assert len(after["effects"]) == len(r.drafter_update["added"])
        assert after["effects"].count("new context") == after["contexts"] - before["contexts"]
        fresh = len(after["effects"]) - after["effects"].count("count + 1")
        assert fresh == sum(after["entries"].values()) - sum(before["entries"].values())
        for src in ("accepted", "filler_top_k"):
            assert after["counts"][src] - before["counts"][src] == by_source(r, src)
    assert states[-1]["entries"]["filler_top_k"] > 0 and states[-1]["entries"]["accepted"] > 0


def test_replay_by_hand():
    # Prompt 1 2 3 1 2 with n = 3: (1,2)->3, (2,3)->1, (3,1)->2, one count each.
    d = NASDDrafter([1, 2, 3, 1, 2], n=3, filler_top_k=2)
    p = torch.zeros(2, 6)
    p[0, 3], p[0, 5] = 0.6, 0.4  # after (1, 2): 3 emitted, 5 the runner-up
    p[1, 4], p[1, 1] = 0.7, 0.3  # after (2, 3): 4 emitted (new entry), 1 the runner-up (count + 1)
    first = SimpleNamespace(index=0, number=1, drafter_update=d.update([1, 2, 3, 1, 2], [3, 4], p))
    p = torch.zeros(1, 6)
    p[0, 2], p[0, 0] = 0.9, 0.1  # after (3, 4): a context the storage has never seen
    second = SimpleNamespace(index=1, number=2, drafter_update=d.update([1, 2, 3, 1, 2, 3, 4], [2], p))
    states = charts.storage_growth(d.rows(), [first, second])
    assert (states[0]["contexts"], dict(states[0]["entries"])) == (3, {"prompt": 3})
    assert states[1]["effects"] == ["count + 1", "new entry", "new entry", "count + 1"]
    assert states[2]["effects"] == ["new context", "new entry"]
    assert dict(states[2]["entries"]) == {"prompt": 3, "filler_top_k": 2, "accepted": 2}
    assert dict(states[2]["counts"]) == {"prompt": 3, "accepted": 3, "filler_top_k": 3}
    with pytest.raises(ValueError, match="do not belong together"):
        charts.storage_growth(NASDDrafter([1, 2, 3], n=3).rows(), [first, second])


def test_growth_figure_sums_to_the_additions(run):
    states = charts.storage_growth(run.generation.drafter.rows(), run.rounds)
    fig = charts.growth_figure(states, current=2)
    t = {d.name: d for d in fig.data}
    for src in ("accepted", "filler_top_k"):
        assert list(t[f"added from {src}"].y) == [by_source(r, src) for r in run.rounds]
        assert list(t[f"entries from {src}"].y) == [s["entries"][src] for s in states]
    assert list(t["new contexts"].y) == [s["contexts"] - states[0]["contexts"] for s in states]
    assert (
        f"the prompt's {states[0]['entries']['prompt']}<br>(in {states[0]['contexts']} contexts)"
        in fig.layout.annotations[0].text
    )
    total = sum(sum(t[f"added from {src}"].y) for src in ("accepted", "filler_top_k"))
    assert total == sum(len(r.drafter_update["added"]) for r in run.rounds)


def test_drafts_and_lookups(run):
    fig = charts.drafts_figure(run.rounds)
    t = {d.name: d for d in fig.data}
    known, filler = t["drafted from a known context"].y, t["drafted by the filler"].y
    assert [a + b for a, b in zip(known, filler, strict=True)] == [len(r.draft_tokens) for r in run.rounds]
    assert list(t["accepted"].y) == [r.n_accepted for r in run.rounds]
    stops = [r.number for r in run.rounds if r.draft_notes["stopped_unknown"]]
    assert list(t["stopped at an unknown context"].x) == stops and stops  # this prompt has unknown contexts
    vocab = run.generation.trace.vocab
    r = max(run.rounds, key=lambda r: r.n_accepted)
    frame = charts.lookups_frame(r, vocab)
    assert len(frame) == len(r.draft_notes["lookups"])
    assert list(frame["verification"]).count("accepted") == r.n_accepted
    assert "".join(frame["draft"]) == "".join(charts.label(vocab, t) for t in r.draft_tokens)
