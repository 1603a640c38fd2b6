"""The trie page: its charts hold the round's numbers (trie frequencies, matched prefix, draft
tree, position ids, mask, accepted path, gathered cache entries). The page itself:
tests/app/test_tree_page.py (AppTest, with its knobs) and tests/browser/test_tree_page_browser.py."""

import pytest

from models.checkpoint import load_checkpoint
from specviz.charts import tree as charts
from specviz.core.session import Session
from specviz.core.settings import Settings
from specviz.drafters import drafter_names
from specviz.drafters.trie import NGramTrie
from specviz.teaching.presets import preset

TREE_DRAFTERS = drafter_names(tree=True)


@pytest.fixture(scope="module")
def run():
    target = load_checkpoint("target")
    prompt = target.tokenizer.encode(preset("Quote a passage").text)
    settings = Settings(drafter="trie", max_new_tokens=60, seed=3)  # this seed has a round with 4 accepted
    session = Session(target, prompt, settings, None)
    session.run_to_end()
    return session


def best_tree(session):
    """A round verified with a real tree mask, the one with the longest accepted path."""
    trees = [r for r in session.rounds if r.tree_mask is not None]
    return max(trees, key=lambda r: r.n_accepted)


def root_of(session, r):
    return (session.generation.trace.prompt + session.generation.trace.tokens)[r.context_len - 1]


def traces_by_name(fig):
    return {t.name: t for t in fig.data if t.name}


def test_trie_figure_holds_the_trie_and_the_round(run):
    r = best_tree(run)
    assert r.n_accepted >= 2  # the seed gives a round worth drawing
    trie, vocab = run.generation.drafter.trie, run.generation.trace.vocab
    fig = charts.trie_figure(
        trie.nodes(), vocab, r.draft_notes["matched_prefix"], r.draft_notes["tree"], r.accepted_path
    )
    t = traces_by_name(fig)
    ids = {name: [c[0] for c in t[name].customdata] for name in t if t[name].customdata is not None}
    # Every drawn node carries the trie's own frequency and depth.
    for name in ids:
        for node_id, freq, depth, _ in t[name].customdata:
            assert (freq, depth) == (trie.freq[node_id], trie.depth[node_id])
    # The matched prefix is the chain from the root, highlighted.
    prefix = r.draft_notes["matched_prefix"]
    assert [trie.token[i] for i in sorted(ids["matched prefix"], key=lambda i: trie.depth[i])] == prefix
    # The accepted path, and only it, is highlighted green: walk it in the trie by hand.
    node, path = trie.find(prefix), []
    for i in r.accepted_path:
        node = trie.children[node][r.draft_tokens[i]]
        path.append(node)
    assert sorted(ids["accepted path"]) == sorted(path)
    # Draft + accepted = the pruned tree, each a descendant of the matched node.
    drafted = ids["draft tree (pruned)"] + ids["accepted path"]
    assert sorted(trie.token[i] for i in drafted) == sorted(r.draft_tokens)
    assert all(trie.depth[i] > len(prefix) for i in drafted)
    assert f"{len(trie) - 1:,} nodes" in fig.layout.title.text


def test_trie_figure_layout_and_cut():
    # The paper's Figure 1 setting (n = 6, L_p = 3), as in tests/unit/test_trie.py.
    trie = NGramTrie.build([1, 2, 3, 4, 5, 6, 1, 2, 3, 7], 6, 3)
    vocab = "".join(chr(ord("a") + i) for i in range(10))
    fig = charts.trie_figure(trie.nodes(), vocab, [], [], levels=2, max_nodes=5)
    drawn = [c[0] for t in fig.data if t.customdata is not None for c in t.customdata]
    assert len(drawn) == 5 and 0 in drawn  # the root and the four most frequent nodes below it
    assert all(trie.depth[i] <= 2 for i in drawn)
    assert all(trie.freq[i] >= 3 for i in drawn if i)  # the frequency-4 and -3 nodes, best first
    assert f"{len(trie) - 5:,} not drawn" in fig.layout.title.text
    # Layered: x is the depth, and every drawn child sits one layer right of its drawn parent.
    xy = {
        c[0]: (x, y)
        for t in fig.data
        if t.customdata is not None
        for c, x, y in zip(t.customdata, t.x, t.y, strict=True)
    }
    assert all(xy[i][0] == trie.depth[i] for i in xy)
    leaves = [i for i in xy if not any(trie.parent[j] == i for j in xy)]
    assert len({xy[i][1] for i in leaves}) == len(leaves)  # leaves never overlap


def test_flattening_positions_and_status(run):
    r = best_tree(run)
    fig = charts.flattening_figure(r, run.generation.trace.vocab, root_of(run, r))
    assert list(fig.layout.xaxis.ticktext) == [str(p) for p in r.draft_positions]
    # Siblings share a position id: kv_before + depth.
    depths = [p - r.kv_before for p in r.draft_positions[1:]]
    assert depths == [1 if p == -1 else depths[p] + 1 for p in r.draft_parents]
    t = traces_by_name(fig)
    assert sorted(t["accepted"].x) == [i + 1 for i in r.accepted_path]
    rejected = [p.node + 1 for p in r.positions if not p.accepted]
    shown = sorted(t["rejected"].x) if "rejected" in t else []  # no trace when nothing was rejected
    assert shown == sorted(rejected) and len(fig.layout.shapes) == len(r.draft_tokens)


def test_mask_heatmap_is_the_tree_mask(run):
    r = best_tree(run)
    fig = charts.mask_figure(r, run.generation.trace.vocab, root_of(run, r))
    assert [list(row) for row in fig.data[0].z] == [[int(v) for v in row] for row in r.tree_mask]
    rows = list(fig.layout.yaxis.ticktext)
    assert all(f"pos {p}" in row for row, p in zip(rows, r.draft_positions, strict=True))
    outlined = sorted(int(s.y0 + 0.5) for s in fig.layout.shapes)
    assert outlined == [0] + [i + 1 for i in r.accepted_path]
    assert [row.startswith("✓") for row in rows] == [i in outlined for i in range(len(rows))]


def test_mask_of_a_chain_round_is_causal(run):
    r = next(r for r in run.rounds if r.tree_mask is None and r.draft_tokens)
    z = charts.mask_figure(r, run.generation.trace.vocab, root_of(run, r)).data[0].z
    n = len(r.draft_tokens) + 1
    assert [list(row) for row in z] == [[int(j <= i) for j in range(n)] for i in range(n)]


def test_kv_gather_holds_the_kept_entries(run):
    r = best_tree(run)
    fig = charts.kv_gather_figure(r, run.generation.trace.vocab, root_of(run, r))
    t = traces_by_name(fig)
    kept = r.kv_kept
    assert kept == [r.kv_before] + [r.kv_before + 1 + i for i in r.accepted_path]
    assert sorted(t["after verify: kept"].x) == kept
    assert len(t["after verify: kept"].x) + len(t["after verify: dropped"].x) == r.kv_after_verify - r.kv_before
    assert list(t["after gather"].x) == list(range(r.kv_before, r.kv_after_trim))
    assert [(s.x0, s.x1) for s in fig.layout.shapes] == list(
        zip(kept, range(r.kv_before, r.kv_after_trim), strict=True)
    )
