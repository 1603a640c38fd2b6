import json
import random

import torch
from hypothesis import given
from hypothesis import strategies as st

from specviz.drafters.base import tree_mask
from specviz.drafters.trie import NGramTrie, TrieDrafter

# The setting of the paper's Figure 1: n = 6, L_p = 3.
TOKENS = [1, 2, 3, 4, 5, 6, 1, 2, 3, 7]

# Derived by hand. Windows start at i = 0..6 (from i = 7 on, S is empty):
#   123|456 234|561 345|612 456|123 561|237 612|37 123|7
# each inserts P[0:]+S, P[1:]+S, P[2:]+S, 21 keys in all:
#   123456 23456 3456 | 234561 34561 4561 | 345612 45612 5612 | 456123 56123 6123
#   561237 61237 1237 | 61237 1237 237 | 1237 237 37
# A node's frequency is the number of keys starting with its path, e.g. (1, 2, 3): 123456 and
# 1237 three times = 4; (1, 2, 3, 7): 3.
EXPECTED = {
    (1,): 4, (1, 2): 4, (1, 2, 3): 4, (1, 2, 3, 4): 1, (1, 2, 3, 4, 5): 1, (1, 2, 3, 4, 5, 6): 1, (1, 2, 3, 7): 3,
    (2,): 4, (2, 3): 4, (2, 3, 4): 2, (2, 3, 4, 5): 2, (2, 3, 4, 5, 6): 2, (2, 3, 4, 5, 6, 1): 1, (2, 3, 7): 2,
    (3,): 4, (3, 4): 3, (3, 4, 5): 3, (3, 4, 5, 6): 3, (3, 4, 5, 6, 1): 2, (3, 4, 5, 6, 1, 2): 1, (3, 7): 1,
    (4,): 3, (4, 5): 3, (4, 5, 6): 3, (4, 5, 6, 1): 3, (4, 5, 6, 1, 2): 2, (4, 5, 6, 1, 2, 3): 1,
    (5,): 3, (5, 6): 3, (5, 6, 1): 3, (5, 6, 1, 2): 3, (5, 6, 1, 2, 3): 2, (5, 6, 1, 2, 3, 7): 1,
    (6,): 3, (6, 1): 3, (6, 1, 2): 3, (6, 1, 2, 3): 3, (6, 1, 2, 3, 7): 2,
}  # fmt: skip


def paths(trie):
    """{root-to-node token path: frequency} for every node but the root, from the flat node list."""
    nodes = trie.nodes()
    path = {0: ()}
    for nd in nodes[1:]:  # parents come first
        path[nd["id"]] = path[nd["parent"]] + (nd["token"],)
    return {path[nd["id"]]: nd["frequency"] for nd in nodes[1:]}


def drafter(num_draft=16):
    return TrieDrafter(TOKENS, n=6, max_prefix_len=3, num_draft=num_draft)


def draft(context, k=8, num_draft=16):
    return drafter(num_draft).draft(context, k, 1.0, torch.Generator())


def test_build_figure1():
    trie = NGramTrie.build(TOKENS, n=6, max_prefix_len=3)
    assert paths(trie) == EXPECTED
    assert len(trie) == len(EXPECTED) + 1  # plus the root
    root = trie.nodes()[0]
    assert root == {"id": 0, "parent": -1, "token": None, "frequency": 21, "depth": 0}
    assert all(nd["depth"] == len(p) for nd, p in zip(trie.nodes()[1:], paths(trie), strict=True))


def test_build_short_input():
    assert len(NGramTrie.build([1, 2, 3], n=6, max_prefix_len=3)) == 1  # no window has a suffix
    assert paths(NGramTrie.build([1, 2, 3, 4], n=6, max_prefix_len=3)) == {
        (1,): 1, (1, 2): 1, (1, 2, 3): 1, (1, 2, 3, 4): 1,
        (2,): 1, (2, 3): 1, (2, 3, 4): 1,
        (3,): 1, (3, 4): 1,
    }  # fmt: skip


def test_full_match():
    d = draft([4, 1, 2, 3])  # only the last L_p = 3 tokens count
    assert d.notes["matched_prefix"] == [1, 2, 3] and d.notes["matched_length"] == 3
    # children of (1,2,3): 7 (freq 3) is visited before 4 (freq 1) despite its larger id
    assert d.tokens == [7, 4, 5, 6]
    assert d.parents == [-1, -1, 1, 2]
    assert d.q is None
    assert d.notes["pruned_from"] == 4 and d.notes["trie_nodes"] == 39
    assert d.notes["tree"] == [
        {"token": 7, "parent": -1, "depth": 1, "frequency": 3},
        {"token": 4, "parent": -1, "depth": 1, "frequency": 1},
        {"token": 5, "parent": 1, "depth": 2, "frequency": 1},
        {"token": 6, "parent": 2, "depth": 3, "frequency": 1},
    ]
    json.dumps(d.notes)


def test_backoff():
    d = draft([8, 2, 3])  # no 8 in the trie: back off to (2, 3)
    assert d.notes["matched_prefix"] == [2, 3]
    # 4 and 7 both have frequency 2: the lower token id goes first
    assert d.tokens == [4, 5, 6, 1, 7]
    assert d.parents == [-1, 0, 1, 2, -1]
    d = draft([9, 9, 6])  # down to one token
    assert d.notes["matched_length"] == 1 and d.tokens == [1, 2, 3, 7] and d.parents == [-1, 0, 1, 2]
    d = draft([5, 3, 7])  # (3, 7) matches but is a leaf: nothing to propose
    assert d.notes["matched_prefix"] == [3, 7] and d.tokens == [] and d.notes["pruned_from"] == 0


def test_no_match():
    for context in ([9, 8, 7], [7], []):
        d = draft(context)
        assert d.tokens == [] and d.parents == []
        assert d.notes["matched_prefix"] == [] and d.notes["matched_length"] == 0 and d.notes["tree"] == []


def test_num_draft_and_ties():
    # (1,2,3): 7 has frequency 3; 4, 5, 6 have 1 each, and the shallowest wins the tie
    d = draft([1, 2, 3], num_draft=2)
    assert d.tokens == [7, 4] and d.parents == [-1, -1]
    assert d.notes["pruned_from"] == 4
    # (2,3): 4, 7, 5, 6 all have frequency 2. Depth beats depth-first order (7 before 5), and
    # at equal depth the earlier node in depth-first order (4) wins.
    assert draft([2, 3], num_draft=1).tokens == [4]
    d = draft([2, 3], num_draft=2)
    assert d.tokens == [4, 7] and d.parents == [-1, -1]
    d = draft([2, 3], num_draft=3)
    assert d.tokens == [4, 5, 7] and d.parents == [-1, 0, -1]
    d = draft([2, 3], num_draft=4)
    assert d.tokens == [4, 5, 6, 7] and d.parents == [-1, 0, 1, -1]


def test_depth_limit():
    d = draft([1, 2, 3], k=2)
    assert d.tokens == [7, 4, 5] and d.parents == [-1, -1, 1]
    assert max(d.depths) == 2
    d = draft([6], k=1)
    assert d.tokens == [1] and d.parents == [-1]
    assert draft([6], k=0).tokens == []


def test_drafter_interface():
    dr = drafter()
    assert dr.name == "trie" and dr.deterministic
    assert dr.update([1, 2, 3], [7], torch.zeros(1, 8)) == {}
    a = dr.draft([1, 2, 3], 4, 0.0, torch.Generator())
    b = dr.draft([1, 2, 3], 4, 1.5, torch.Generator().manual_seed(7))
    assert (a.tokens, a.parents) == (b.tokens, b.parents)  # temperature and gen are ignored
    assert NGramTrie.build(torch.tensor(TOKENS), 6, 3).nodes() == dr.trie.nodes()


def test_random_drafts_are_valid_trees():
    rng = random.Random(0)
    tokens = [rng.randrange(4) for _ in range(300)]
    dr = TrieDrafter(tokens, n=7, max_prefix_len=3, num_draft=10)
    for _ in range(50):
        context = tokens[: rng.randrange(1, 300)] + [rng.randrange(5) for _ in range(rng.randrange(3))]
        k = rng.randrange(1, 6)
        d = dr.draft(context, k, 1.0, torch.Generator())
        assert len(d.tokens) <= 10 and all(1 <= x <= k for x in d.depths)
        assert all(p < i for i, p in enumerate(d.parents))
        kids = {}
        for t, p in zip(d.tokens, d.parents, strict=True):
            kids.setdefault(p, []).append(t)
        assert all(len(v) == len(set(v)) for v in kids.values())  # distinct siblings
        # every draft node is a path in the trie below the match, frequencies never increase going down
        for i, nd in enumerate(d.notes["tree"]):
            path, j = [], i
            while j != -1:
                path.insert(0, d.tokens[j])
                j = d.parents[j]
            node = dr.trie.find(d.notes["matched_prefix"] + path)
            assert node is not None and dr.trie.freq[node] == nd["frequency"]
            assert nd["parent"] == -1 or d.notes["tree"][nd["parent"]]["frequency"] >= nd["frequency"]
        json.dumps(d.notes)


def test_tree_mask():
    # root r; a and d its children; b and c children of a:   r -> a -> {b, c},  r -> d
    mask = tree_mask([-1, 0, 0, -1])
    expected = torch.tensor(
        [
            [1, 0, 0, 0, 0],  # r
            [1, 1, 0, 0, 0],  # a
            [1, 1, 1, 0, 0],  # b
            [1, 1, 0, 1, 0],  # c
            [1, 0, 0, 0, 1],  # d
        ],
        dtype=torch.bool,
    )
    assert mask.dtype == torch.bool and torch.equal(mask, expected)
    assert torch.equal(tree_mask([]), torch.ones(1, 1, dtype=torch.bool))
    chain = tree_mask([-1, 0, 1])  # a chain is causal
    assert torch.equal(chain, torch.ones(4, 4, dtype=torch.bool).tril())


@given(st.lists(st.integers(0, 10**6), max_size=40))
def test_tree_mask_is_ancestry_on_any_tree(picks):
    """mask[i, j] iff j is i or an ancestor of i, on random depth-first-valid trees (any parent
    before its child), against the definition walked up parent by parent."""
    parents = [pick % (i + 1) - 1 for i, pick in enumerate(picks)]  # -1 .. i - 1
    mask = tree_mask(parents)
    n = len(parents) + 1
    expected = torch.zeros(n, n, dtype=torch.bool)
    for row in range(n):
        node = row - 1
        expected[row, 0] = True
        while node >= 0:
            expected[row, node + 1] = True
            node = parents[node]
    assert mask.shape == (n, n) and mask.dtype == torch.bool and torch.equal(mask, expected)
