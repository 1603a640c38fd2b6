import json

import torch

from specviz.drafters.nasd import NASDDrafter

PROMPT = [0, 1, 2, 0, 1, 3, 0, 1, 2]  # trigrams: (0,1)->2 twice, (0,1)->3, (1,2)->0, (2,0)->1, (1,3)->0, (3,0)->1


def test_init_from_prompt():
    d = NASDDrafter(PROMPT, n=3)
    assert d.rows() == [
        {"context": [0, 1], "counts": [[2, 2], [3, 1]]},
        {"context": [1, 2], "counts": [[0, 1]]},
        {"context": [1, 3], "counts": [[0, 1]]},
        {"context": [2, 0], "counts": [[1, 1]]},
        {"context": [3, 0], "counts": [[1, 1]]},
    ]
    assert d.size() == {"contexts": 5, "entries": 6}
    assert d.name == "nasd" and d.deterministic
    # n=1 is a plain unigram table; a prompt shorter than n-1 gives an empty storage
    assert NASDDrafter([4, 4, 5], n=1).rows() == [{"context": [], "counts": [[4, 2], [5, 1]]}]
    assert NASDDrafter([4, 5], n=3).size() == {"contexts": 0, "entries": 0}


def test_draft_follows_most_frequent():
    d = NASDDrafter(PROMPT, n=3)
    dr = d.draft([5, 0, 1], 4, 1.0, torch.Generator())
    # (0,1)->2 (2 beats 3), (1,2)->0, (2,0)->1, (0,1)->2
    assert dr.tokens == [2, 0, 1, 2] and dr.is_chain and dr.q is None
    assert dr.notes["known"] == [True] * 4
    assert dr.notes["lookups"][0] == {"context": [0, 1], "known": True, "filler": False, "token": 2}
    assert dr.notes["storage"] == {"contexts": 5, "entries": 6}
    assert dr.notes["stopped_unknown"] is False and dr.notes["filler_used"] is False
    assert d.draft([5, 0, 1], 2, 0.0, None).tokens == [2, 0]  # k caps the draft
    assert d.draft([5, 0, 1], 0, 0.0, None).tokens == []
    # a tie goes to the lowest id: (0,1) -> {3: 1, 2: 1}
    assert NASDDrafter([0, 1, 3, 0, 1, 2], n=3).draft([0, 1], 1, 0.0, None).tokens == [2]


def test_stop_if_unknown():
    d = NASDDrafter([7, 8, 9], n=3)  # only (7,8)->9
    dr = d.draft([7, 8], 3, 0.0, None)
    assert dr.tokens == [9] and dr.notes["known"] == [True]
    assert dr.notes["stopped_unknown"] is True
    assert dr.notes["lookups"][-1] == {"context": [8, 9], "known": False, "filler": False, "token": None}
    assert d.draft([1, 2], 3, 0.0, None).tokens == []
    assert d.draft([2], 3, 0.0, None).tokens == []  # shorter than n-1: unknown too


def test_filler_when_unknown():
    # unigram over the storage: 3 twice, 1, 2, 4 once each -> the filler is 3
    d = NASDDrafter([1, 2, 3, 1, 2, 3, 4], n=3, stop_if_unknown=False)
    dr = d.draft([9, 9], 2, 0.0, None)
    assert dr.tokens == [3, 3]  # (9,9) and (9,3) are both unknown
    assert dr.notes["known"] == [False, False] and dr.notes["filler_used"] is True
    assert dr.notes["stopped_unknown"] is False
    dr = d.draft([3, 1], 3, 0.0, None)
    assert dr.tokens == [2, 3, 1]  # (3,1)->2, (1,2)->3, (2,3)->1 (tie 1 vs 4)
    assert dr.notes["filler_used"] is False
    # known context, then unknown, then filler
    dr = NASDDrafter([7, 8, 9], n=3, stop_if_unknown=False).draft([7, 8], 3, 0.0, None)
    assert dr.tokens == [9, 9, 9] and dr.notes["known"] == [True, False, False]
    # an empty storage has no filler to offer: the draft ends
    dr = NASDDrafter([1], n=3, stop_if_unknown=False).draft([1, 2], 3, 0.0, None)
    assert dr.tokens == [] and dr.notes["stopped_unknown"] is True


def test_update_accepted():
    d = NASDDrafter(PROMPT, n=3)
    notes = d.update([0, 1, 2], [0, 1], torch.zeros(2, 5))
    assert notes["added"] == [
        {"context": [1, 2], "token": 0, "source": "accepted"},
        {"context": [2, 0], "token": 1, "source": "accepted"},
    ]
    assert notes["storage"] == {"contexts": 5, "entries": 6}  # counts grew, no new entries
    assert {"context": [1, 2], "counts": [[0, 2]]} in d.rows()
    notes = d.update([0, 1], [4, 4], torch.zeros(2, 5))
    assert [a["context"] for a in notes["added"]] == [[0, 1], [1, 4]]
    assert notes["storage"] == {"contexts": 6, "entries": 8}
    # a context shorter than n-1 can't be stored: only the third token is learnt
    notes = NASDDrafter([], n=3).update([], [1, 2, 3], torch.zeros(3, 5))
    assert notes["added"] == [{"context": [1, 2], "token": 3, "source": "accepted"}]


def test_update_changes_draft():
    d = NASDDrafter([5, 6, 7], n=2)  # (5)->6, (6)->7
    assert d.draft([5], 1, 0.0, None).tokens == [6]
    d.update([7, 5], [8], torch.zeros(1, 10))
    assert d.draft([5], 1, 0.0, None).tokens == [6]  # tie 6 vs 8 -> 6
    d.update([7, 5], [8], torch.zeros(1, 10))
    assert d.draft([5], 1, 0.0, None).tokens == [8]


def test_update_filler_top_k():
    d = NASDDrafter(PROMPT, n=3, filler_top_k=2)
    p = torch.tensor(
        [
            [0.6, 0.1, 0.0, 0.3, 0.0],  # emitted 0 is in the top 2: only 3 is extra
            [0.2, 0.2, 0.5, 0.1, 0.0],  # top 2 = 2, then 0 (tie with 1, lower id); emitted 1 is not in it
        ],
        dtype=torch.float64,
    )
    notes = d.update([0, 1, 2], [0, 1], p)
    assert notes["added"] == [
        {"context": [1, 2], "token": 0, "source": "accepted"},
        {"context": [1, 2], "token": 3, "source": "filler_top_k"},
        {"context": [2, 0], "token": 1, "source": "accepted"},
        {"context": [2, 0], "token": 2, "source": "filler_top_k"},
        {"context": [2, 0], "token": 0, "source": "filler_top_k"},
    ]
    assert notes["storage"] == {"contexts": 5, "entries": 9}
    assert {"context": [2, 0], "counts": [[1, 2], [0, 1], [2, 1]]} in d.rows()
    # a one-hot p (temperature 0) has no second token worth storing
    notes = NASDDrafter(PROMPT, n=3, filler_top_k=2).update([0, 1, 2], [0], torch.tensor([[1.0, 0, 0, 0, 0]]))
    assert [a["source"] for a in notes["added"]] == ["accepted"]


def test_deterministic_and_json():
    def run():
        d = NASDDrafter(PROMPT, n=3, filler_top_k=2, stop_if_unknown=False)
        out = [d.draft([9, 0, 1], 3, 1.0, torch.Generator().manual_seed(s)).notes for s in (0, 1)]
        out.append(d.update([9, 0, 1], [2, 0, 5], torch.full((3, 6), 1 / 6)))
        out.append(d.draft([0, 5], 4, 0.7, None).notes)
        out.append(d.rows())
        return json.dumps(out)

    assert run() == run()
