"""What the tree page draws for the round under the cursor, for any tree drafter: the draft tree
and its accepted path, the children of one node tried in turn, the depth-first flattening, the
tree attention mask and the KV cache entries gathered along the path. A drafter with internals
worth drawing adds its own panel (the trie drafter: the n-gram trie around the matched prefix).
Every figure and table comes from specviz.charts.

Before the first round the trie panel previews the draft the first round will send: the trie
drafter is deterministic and keeps no state, so drafting from the prompt here changes nothing.
"""

from dataclasses import replace

import streamlit as st
import torch

from specviz.adaptive.sequoia import SHAPES, optimal_tree, rank_paths, reach
from specviz.charts import candidate_frame, label, label_text
from specviz.charts import tree as charts
from specviz.charts.draft_tree import draft_tree_figure, shape_figure
from specviz.charts.verdict import CANDIDATE_HELP, CANDIDATE_VIEW, PQ_WORDS
from specviz.core.engine import Generation
from specviz.core.markup import md
from specviz.core.record import RoundRecord, worded
from specviz.core.session import Session
from specviz.drafters import drafter_class
from ui.common import load_models
from ui.knobs import text_tail
from ui.method_views import TRIE
from ui.round_view import chart, sibling_tries
from ui.widgets import table

SAMPLING = {"with-replacement": "each node's children sampled from q with replacement",
            "without-replacement": "each node's children sampled from q without replacement"}  # fmt: skip


def _first_draft(session: Session) -> dict:
    """The draft notes of round 0, computed or about to be (same depth limit as the engine)."""
    if session.rounds:
        return session.rounds[0].draft_notes
    gen = session.generation  # before its first round: its tokens are the prompt
    return gen.drafter.draft(list(gen.tokens), gen.draft_limit, gen.settings.temperature, torch.Generator()).notes


def _end(r: RoundRecord, vocab: list[str]) -> str:
    if r.correction is not None:
        return f"correction '{md(label(vocab, r.correction))}'"
    return f"bonus '{md(label(vocab, r.bonus))}'"


def _headline(r: RoundRecord, vocab: list[str], s) -> tuple[str, str]:
    """(heading, detail) for any tree drafter's round."""
    how = SAMPLING.get(r.draft_sampling, "a deterministic tree (q is one-hot on each node)")
    return (f"Round {r.number}: drafted {len(r.draft_tokens)}, accepted {r.n_accepted}; {_end(r, vocab)}",
            f"The {md(s.drafter)} drafter sent {len(r.draft_tokens)} nodes at most K = {s.k} deep: {how}. "
            f"Verified with the {md(s.verification)} rule.")  # fmt: skip


def _trie_headline(r: RoundRecord, vocab: list[str], s) -> tuple[str, str]:
    """(heading, detail) for the trie drafter's round, from its notes."""
    notes = r.draft_notes
    if not notes["matched_prefix"]:
        return (f"Round {r.number}: no match, no draft; {_end(r, vocab)}",
                f"No suffix of the context (up to L_p = {s.trie_prefix_len} characters) is a chain in the trie, so "
                "nothing is drafted and the target adds one character, as in plain decoding.")  # fmt: skip
    prefix = md(label_text(vocab, notes["matched_prefix"]))
    if not r.draft_tokens:
        return (f"Round {r.number}: matched '{prefix}', nothing below it; {_end(r, vocab)}",
                "The matched node is a leaf: nothing followed it in the prompt, so nothing is drafted.")  # fmt: skip
    return (f"Round {r.number}: matched '{prefix}', drafted {len(r.draft_tokens)}, accepted {r.n_accepted}; "
            f"{_end(r, vocab)}",
            f"The context's last {notes['matched_length']} characters (of L_p = {s.trie_prefix_len}) matched; the "
            f"draft keeps the {len(r.draft_tokens)} most frequent of the {notes['pruned_from']} nodes below the match "
            f"(num_draft = {s.trie_num_draft}, at most K = {s.k} deep).")  # fmt: skip


def trie_panel(session: Session) -> None:
    """The trie drafter's own figure: the n-gram trie around the match, the draft and the path."""
    gen, r = session.generation, session.current
    notes = r.draft_notes if r is not None else _first_draft(session)
    c = st.columns(2)
    c[0].slider("Levels drawn below the match", 1, 16, 6, key="tree_levels")
    c[1].slider("Most trie nodes drawn", 20, 400, 80, step=10, key="tree_max_nodes",
                help="The trie can hold thousands of nodes: the chart draws the most frequent ones below the "
                "match. Zoom with the mouse; double-click to zoom out.")  # fmt: skip
    fig = charts.trie_figure(gen.drafter.trie.nodes(), gen.trace.vocab, notes["matched_prefix"], notes["tree"],
                             r.accepted_path if r is not None else [], st.session_state.tree_levels,
                             st.session_state.tree_max_nodes)  # fmt: skip
    chart(fig, "trie_chart")


def _measured_taus(settings, prompt: list[int], n: int = 300) -> dict[str, float]:
    """Tokens per target pass of each tree shape, on this prompt, ``n`` characters each (same seed)."""
    target, _ = load_models()
    out = {}
    for shape in SHAPES:
        run = Generation(target, prompt, replace(settings, tree_shape=shape, max_new_tokens=n)).run()
        out[shape] = len(run.tokens) / len(run.rounds)
    return out


def shape_panel(session: Session, r: RoundRecord) -> None:
    """A drafter whose tree may take Sequoia's shape (its ``shaped`` trait: ``rates``, ``nodes``,
    ``sequoia_rates`` and ``tree_draft``): for this round's context, the tree grown from its confidence
    beside Sequoia's fixed shape at the same node budget and K, each node shaded by the chance the
    rank/depth model gives it, with tau = 1 + the sum of those chances."""
    gen, s = session.generation, session.generation.settings
    drafter, trace = gen.drafter, gen.trace
    st.markdown("**Sequoia's shape beside the dynamic tree, at the same node budget**")
    rates = drafter.rates
    if rates is None and not st.toggle("Compare with Sequoia's shape (measures its rates once: a few seconds)",
                                       key="sequoia_compare"):  # fmt: skip
        return
    if rates is None:
        with st.spinner("Measuring acceptance by sibling rank and depth on the training split…"):
            try:
                rates = drafter.sequoia_rates(load_models()[0], s.temperature, s.k)
            except ValueError as e:
                st.warning(md(str(e)))
                return
    context = (trace.prompt + trace.tokens)[: r.context_len]
    depth = min(s.k, len(rates.accept))  # the rates' depth: the deepest the drafter drafts at this K

    def tree(shape):  # a sampled tree's children drawn from the same seed for both shapes
        return drafter.tree_draft(context, s.k, shape, s.temperature, torch.Generator().manual_seed(s.seed))

    shapes = {SHAPES[0]: tree(None), SHAPES[1]: tree(optimal_tree(rates, drafter.nodes, depth))}
    for col, (name, d) in zip(st.columns(2), shapes.items(), strict=True):
        chance = reach(rank_paths(d.parents), rates)
        title = (f"{name}: {len(d.tokens)} nodes, τ = {1 + sum(chance):.2f} by the model<br><sub>Shade: the chance "
                 "the model gives a node of being accepted.</sub>")  # fmt: skip
        with col:
            chart(shape_figure(d.tokens, d.parents, chance, trace.vocab, trace.root(r), title), f"shape_{name}")
    summary = trace.summary()
    sampled = (
        " (its children drawn from q, the same seed for both)" if s.temperature > 0 and drafter.sampled_tree else ""
    )
    st.caption(md(f"The dynamic tree grows where the {s.drafter} drafter is confident in this context{sampled}; "
                  f"Sequoia's shape is the same for every context: the tree of at most {drafter.nodes} nodes and K = {s.k} levels with the most "
                  f"expected accepted characters under acceptance rates by sibling rank and depth, {rates.source} "
                  f"(Sequoia, Chen et al., 2024). This run ({s.tree_shape}) so far: τ = "
                  f"{summary['tokens'] / max(1, summary['target_forwards']):.2f} characters per target pass."))  # fmt: skip
    if st.button("Measure τ of both shapes on this prompt (300 characters each)", key="sequoia_measure"):
        with st.spinner("Running both shapes…"):
            st.session_state.sequoia_taus = (s, _measured_taus(s, trace.prompt))
    kept = st.session_state.get("sequoia_taus")
    if kept is not None and kept[0] == s:
        st.caption(md("Measured on this prompt: " + ", ".join(f"{k} τ = {v:.2f}" for k, v in kept[1].items()) + "."))


def tree_view(session: Session) -> None:
    gen, r = session.generation, session.current
    s, trace = gen.settings, gen.trace
    vocab = trace.vocab
    has_trie = TRIE in gen.drafter.panels  # a drafter with an n-gram trie: a panel of its own
    if r is None:
        st.info("No round yet: only the prompt so far. " + ("Highlighted in the trie: the prefix the first round will "
                "match and the draft tree it will send. " if has_trie else "") + "Press **Next** to send the first "
                "draft to the target.")  # fmt: skip
    else:
        heading, detail = (_trie_headline if has_trie else _headline)(r, vocab, s)
        st.subheader(heading)
        st.caption(detail)
    drafted = r is not None and bool(r.draft_tokens)
    root = trace.root(r) if r is not None else None
    left, right = st.columns([2, 3], gap="large")
    with left:
        text_tail(trace, session.cursor)
    with right:
        if has_trie:
            trie_panel(session)
        elif drafted:
            chart(draft_tree_figure(r, vocab, root), "draft_tree", vocab=vocab)
    if not drafted:
        return
    if has_trie:
        chart(draft_tree_figure(r, vocab, root), "draft_tree", vocab=vocab)
    sibling_tries(r, vocab)  # full width: its nine columns fit the page, not a column of it
    if drafter_class(s.drafter).shaped:
        shape_panel(session, r)
    chart(charts.flattening_figure(r, vocab, root), "flattening", vocab=vocab)
    chart(charts.kv_gather_figure(r, vocab, root), "kv_gather", vocab=vocab)
    # One under the other: beside the mask, the checks table had ~260 px of the ~300 it needs at 1024 px
    chart(charts.mask_figure(r, vocab, root), "tree_mask", vocab=vocab)
    st.markdown("**The target's checks, in the order it made them**")
    st.caption("Depth first: a child is checked only after its parent is accepted; after a rejection the "
               "next sibling is tried against the residual.")  # fmt: skip
    table(candidate_frame(r, vocab), CANDIDATE_HELP, CANDIDATE_VIEW, vocab=vocab)
    st.caption(worded(f"{PQ_WORDS}.", vocab))
