"""The verifiers on the step and tree pages, in AppTest: block beside token-wise, sibling tries,
lossy labels."""

from conftest import click, open_page, shown

from specviz.charts import block, tries


def test_step_page_shows_block_beside_tokenwise():
    at = open_page("pages/step.py", {"verification": "block", "temperature": "1.0", "k": "6"})
    click(at, "nav_next")
    r = at.session_state["run"].current
    assert r.verify_notes["rule"] == "block"
    checks, table = at.dataframe[0].value, at.dataframe[1].value  # beside the text; the block panel's
    assert list(checks.columns) == block.CHECK_COLUMNS and len(checks) == len(r.draft_tokens)
    assert list(table.columns) == block.COLUMNS and len(table) == len(r.draft_tokens)
    e = r.verify_notes["expected_accepted"]
    both = next(m.value for m in at.markdown if "verified both ways" in m.value)
    assert f"**{e['lossless']:.2f}** token-wise, **{e['block']:.2f}** with block" in both
    assert f"which kept **{r.verify_notes['tau']}** this time" in both
    assert any("never keeps fewer" in c.value for c in at.caption)


def step_until_sibling_tries(at, most: int):
    """Step (at most ``most`` rounds) until a round tries several children of one node; that round."""
    session = at.session_state["run"]
    for _ in range(most):
        click(at, "nav_next")
        if tries.multi_try_nodes(session.current):
            break
    return session.current


def test_tree_page_draws_any_tree_drafter():
    at = open_page("pages/tree.py", {"drafter": "distilled-tree", "temperature": "1.0"})
    r = step_until_sibling_tries(at, 8)
    specs = [c.proto.spec for c in at.get("plotly_chart")]
    assert any("Draft tree:" in s for s in specs) and not any("N-gram trie" in s for s in specs)
    assert any('"heatmap"' in s for s in specs)  # the tree attention mask
    node = tries.multi_try_nodes(r)[0]
    frame = next(d.value for d in at.dataframe if "try" in d.value.columns)
    assert list(frame["node"]) == [p.node for p in r.positions if r.draft_parents[p.node] == node]
    assert any(shown(c.value).startswith(f"{len(frame)} children of") for c in at.caption)
    assert at.slider(key="knob_distilled_nodes").value == 16  # its own knobs, not the trie's
    assert all(s.key != "knob_trie_n" for s in at.slider)


def test_sidebar_labels_lossy_rules_and_refuses_block_on_trees():
    at = open_page("pages/step.py", {"drafter": "trie"})
    box = at.sidebar.selectbox(key="ctl_verification")
    assert "nasd-seed (lossy)" in box.options and "block" in box.options and "lossless" in box.options
    click(at, "nav_next")
    before = at.session_state["run"]
    at.sidebar.selectbox(key="ctl_verification").set_value("block").run()
    assert "chains only" in shown(at.error[0].value) and at.session_state["run"] is before  # the run stays
    assert at.subheader[0].value.startswith("Round 1:")
    at.sidebar.selectbox(key="ctl_verification").set_value("lossless").run()
    assert not any(s.key == "ctl_tree_sampling" for s in at.sidebar.selectbox)  # the trie's tree is not sampled
    at.sidebar.selectbox(key="ctl_drafter").set_value("neural-tree").run()  # a sampled tree: the choice shows
    at.sidebar.selectbox(key="ctl_tree_sampling").set_value("with-replacement").run()
    assert not at.exception and at.query_params["tree_sampling"] in ("with-replacement", ["with-replacement"])


def test_step_page_shows_the_tries_of_a_sampled_tree():
    """neural-tree at T = 1, drawn without replacement: the step page lists one node's tries, each
    against the residual the earlier rejections left, with the renormalised q."""
    at = open_page("pages/step.py", {"drafter": "neural-tree", "temperature": "1.0"})
    r = step_until_sibling_tries(at, 12)
    node = tries.multi_try_nodes(r)[0]
    assert r.draft_sampling == "without-replacement"
    frame = next(d.value for d in at.dataframe if "try" in d.value.columns)
    tried = [p for p in r.positions if r.draft_parents[p.node] == node]
    assert list(frame["node"]) == [p.node for p in tried] and len(tried) >= 2
    assert any("without replacement" in shown(c.value) for c in at.caption)
