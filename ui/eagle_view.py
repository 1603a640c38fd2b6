"""The EAGLE panel of the step page: what the head read this round (the target's features it was fed,
then its own fed-back states), the tokens it predicted with their q, and acceptance by draft depth
for each head against the tiny draft. Draws nothing for another drafter's round."""

import json

import streamlit as st

from models.eagle import MODELS_DIR
from specviz.charts import eagle as charts
from specviz.charts import label
from specviz.core.record import RoundRecord
from ui.widgets import chart

DEPTH_FILE = MODELS_DIR / "eagle_depth.json"  # written by: python -m specviz eagle-depth --out models/eagle_depth.json


@st.cache_data(show_spinner=False)
def measured_depths(stamp: float) -> dict | None:
    return json.loads(DEPTH_FILE.read_text()) if DEPTH_FILE.is_file() else None


def eagle_panel(r: RoundRecord, vocab: list[str]) -> None:
    n = r.draft_notes
    if "head" not in n:
        return

    st.markdown(f"**EAGLE: the {n['head']} head drafted from the target's own features.** This round it fed "
                f"{n.get('entries_fed', 0)} new context entries (the target's features, captured by the verify "
                f"passes: no extra target pass) and cached {n.get('entries_cached', 0)}; each draft step after the "
                "first reads the head's own last state instead.")  # fmt: skip
    if charts.feature_rows(r):
        chart(charts.features_heatmap(r, vocab), "eagle_features", vocab=vocab)
    if n.get("predicted"):
        st.caption("Predicted: " + ", ".join(f"{label(vocab, p['token'])} (q {p['q']:.2f})" for p in n["predicted"]))
    depths = measured_depths(DEPTH_FILE.stat().st_mtime if DEPTH_FILE.is_file() else 0.0)
    if depths:
        with st.expander("Acceptance by draft depth: each head against the tiny draft (measured)"):
            st.caption(charts.conditions_text(depths["conditions"]))
            for temp, series in depths["measured"].items():
                chart(charts.depth_figure(series, float(temp)), f"eagle_depth_{temp}")
