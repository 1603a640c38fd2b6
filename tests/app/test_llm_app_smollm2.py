"""The app on the shipped SmolLM2-135M-Instruct (slow: it loads and dequantizes 134.5M parameters): picked in the
sidebar, its chat toggle (an instruct model's template), a round stepped, and records over its 49,152-token
vocabulary kept as the top entries plus the rest, whose bar in the p/q chart is 1 - the shown."""

import pytest
from conftest import chart_specs, click, open_page, rerun

from specviz.core.record import TopRest
from specviz.llm.choice import SMOLLM2
from specviz.llm.presets import LLM_PRESETS

pytestmark = pytest.mark.slow


def test_smollm2_steps_in_tokens_with_top_k_and_rest_records():
    at = open_page("pages/step.py", {"max_new_tokens": "8", "drafter": "prompt-lookup", "temperature": "0.8"})
    at.sidebar.selectbox(key="ctl_model_kind").set_value(SMOLLM2)
    rerun(at)
    assert not at.error and at.session_state["model"].kind == SMOLLM2
    assert at.sidebar.toggle(key="ctl_chat")  # the instruct model's chat template
    at.sidebar.selectbox(key="ctl_preset").set_value(LLM_PRESETS[1].name)
    rerun(at)
    run = at.session_state["run"]
    while not run.current or not run.current.positions:
        click(at, "nav_next")
    r = run.current
    assert all(isinstance(p.p, TopRest) and p.p.size == 49152 for p in r.positions)
    assert all(abs(sum(p.p.probs) + p.p.rest - 1) < 1e-6 for p in r.positions)
    labels = [m.label for m in at.metric]
    assert "Tokens" in labels
    pq = next(c for c in chart_specs(at) if any(d.get("name") == "p (target)" for d in c["data"]))
    p_bar = next(d for d in pq["data"] if d.get("name") == "p (target)")
    assert p_bar["x"][-1] == "the rest" and abs(p_bar["y"][-1] - (1 - sum(p_bar["y"][:-1]))) < 1e-6
