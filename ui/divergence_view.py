"""Step through on a real model at temperature 0: does the speculative text equal plain greedy decoding? Where
it first departed, the two tokens and the logit margin there (specviz/llm/divergence.py), and float64 offered:
in float32 a verify pass may round a near-tie differently from one-token passes; in float64 it does not."""

import streamlit as st

from specviz.charts.distributions import label
from specviz.core.markup import md
from specviz.core.session import Session
from specviz.llm.divergence import first_departure
from ui.model_choice import active_model, run_models

EXPLAIN = ("Greedy speculative decoding keeps the target's argmax at every position, so its text is plain "
           "decoding's, provided the target's logits are the same in both. In float32 a verify pass over several "
           "rows sums in another order than one-token passes, and a near-tie between the two best tokens can flip; "
           "in float64 it cannot.")  # fmt: skip


def _use_float64() -> None:
    st.session_state.model_widgets["dtype"] = "float64"  # the model picker loads it on this rerun


def divergence_panel(session: Session) -> None:
    """The comparison for the tokens shown so far, computed on request (plain decoding runs one pass a token)."""
    gen, model = session.generation, active_model()
    if not model.real or gen.settings.temperature != 0 or session.cursor == 0:
        return
    trace = gen.trace
    tokens = [t for r in trace.rounds[: session.cursor] for t in r.emitted]
    key = (st.session_state.get("run_key"), len(tokens))
    with st.container(border=True, key="sv-divergence"):
        st.markdown("**The same text as plain greedy decoding?**")
        st.caption(EXPLAIN)
        row = st.container(horizontal=True, gap="small")
        if row.button(f"Compare the {len(tokens)} tokens with plain decoding", key="divergence_check"):
            with st.spinner("Plain decoding, one pass a token..."):
                st.session_state.divergence = (key, first_departure(run_models(model)[0], trace.prompt, tokens))
        if model.dtype != "float64":
            row.button("Use float64", key="divergence_float64", on_click=_use_float64,
                       help="Reload the model in float64 (twice the memory): greedy output then equals plain "
                       "decoding token for token.")  # fmt: skip
        done = st.session_state.get("divergence")
        if done is None or done[0] != key:
            return
        d = done[1]
        if d is None:
            st.success(f"Equal: the {len(tokens)} tokens so far are plain greedy decoding's, token for token "
                       f"({model.dtype}).")  # fmt: skip
            return
        vocab = trace.vocab
        st.warning(f"Departed at generated token {d.index + 1}: speculative '{md(label(vocab, d.speculative))}' (id "
                   f"{d.speculative}), plain '{md(label(vocab, d.plain))}' (id {d.plain}). The logit margin there, in "
                   f"one fresh {d.dtype} pass: {d.margin:.3g}, a near-tie that the verify pass's rounding flipped.")  # fmt: skip
