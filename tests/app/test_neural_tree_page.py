"""The neural tree on the step page, in AppTest: the tree-sampling selector and its knobs."""

from conftest import click, open_page


def test_sidebar_shows_tree_sampling_for_the_neural_tree_and_links_keep_it():
    """The step page from a link: the tree-sampling selector appears with the neural tree, its
    knobs are in the sidebar, and a round of a sampled tree runs and is shown."""
    at = open_page("pages/step.py", {"drafter": "neural-tree", "tree_sampling": "with-replacement",
                                     "neural_tree_nodes": "8", "max_new_tokens": "20"})  # fmt: skip
    assert at.selectbox(key="ctl_tree_sampling").value == "with-replacement"
    assert at.number_input(key="ctl_neural_tree_nodes").value == 8
    click(at, "nav_next")
    r = at.session_state["run"].rounds[0]
    assert 1 < len(r.draft_tokens) <= 8 and r.draft_notes["nodes"] == 8
    at.selectbox(key="ctl_drafter").set_value("neural").run()
    assert not at.exception and not [s for s in at.selectbox if s.key == "ctl_tree_sampling"]  # a chain: no selector
