"""The methods atlas: every way the app drafts and verifies, in one chart and two tables, with the
figures of one bench run (docs/bench.jsonl, written by `python -m specviz bench`), each method
linked to its step page on a preset that suits it. The text lives in specviz/teaching/atlas.py."""

from pathlib import Path

import streamlit as st

from specviz.bench.layer_sweep import acceptance_by_layers
from specviz.bench.rows import rows_from_jsonl
from specviz.charts import atlas as charts
from specviz.charts.shootout import results_frame
from specviz.core.markup import md
from specviz.teaching.atlas import atlas_rows
from specviz.teaching.presets import preset
from ui.common import models_or_stop, page_setup, question
from ui.widgets import chart

SWEEP_PRESET = "Dialogue"
BENCH = Path(__file__).resolve().parents[1] / "docs" / "bench.jsonl"


@st.cache_data(show_spinner=False)
def bench_rows(text: str) -> list[dict]:
    return rows_from_jsonl(text)


def render() -> None:
    page_setup()
    st.title("Methods atlas")
    question("Where does each method's draft come from, and what does it buy on this model and CPU?")
    st.caption("Every method the app runs, old and new. The figures are one run of `python -m specviz bench "
               "--threads 1` (docs/bench.jsonl): medians of interleaved repeats against plain decoding in the same "
               "run. A character model of 3M parameters on a 2-core CPU is not Vicuna-7B on a GPU: a target pass "
               "costs little more than a draft, so gains are smaller than the papers'.")  # fmt: skip
    try:
        rows = bench_rows(BENCH.read_text())
    except (OSError, ValueError) as e:
        st.error(
            f"No bench run to show ({e}). Write one: python -m specviz bench --threads 1 --json > docs/bench.jsonl"
        )
        return
    run = rows[0]
    cpu = run.get("cpu") or "a CPU it did not record"  # figures differ from one CPU to another
    st.caption(md(f"The run: {run['version']} on {cpu}, {run['threads']} thread(s), load average "
                  f"{run['load_average']}, {run['prompts']} prompts x {run['new_tokens']} tokens, {run['repeats']} "
                  "repeats."))  # fmt: skip
    table = atlas_rows(rows)
    chart(charts.speedup_figure(table), "atlas_speedup")
    T = st.segmented_control("Figures at", charts.TEMPERATURES, format_func=lambda T: f"T = {T:g}", default=0.0,
                             required=True, key="atlas_t", help="The bench ran every method at both temperatures; "
                             "the chart above shows both speedups.")  # fmt: skip
    config = {h: st.column_config.NumberColumn(help=charts.FIGURE_HELP[h], width=charts.FIGURE_WIDTHS[h], format="%.2f")
              for h in charts.FIGURES}  # fmt: skip
    config["open"] = st.column_config.LinkColumn(help=charts.OPEN_HELP, display_text="step through")
    st.dataframe(charts.figures_frame(table, T), hide_index=True, column_config=config)
    st.markdown("**Where each draft comes from**")
    config = {h: st.column_config.Column(help=charts.SOURCE_HELP[h], width=charts.SOURCE_WIDTHS[h])
              for h in charts.SOURCES}  # fmt: skip
    st.dataframe(
        charts.sources_frame(table), hide_index=True, column_config=config, row_height=charts.SOURCES_ROW_HEIGHT
    )
    with st.expander("The bench rows behind the atlas"):
        st.dataframe(results_frame(rows), hide_index=True)
    layer_sweep()


@st.cache_data(show_spinner=False, max_entries=8)
def _sweep(temperature: float, _target) -> list[dict]:
    return acceptance_by_layers(_target, _target.tokenizer.encode(preset(SWEEP_PRESET).text), temperature)


def layer_sweep() -> None:
    """Layer-skip's knob n against acceptance, measured on demand (three generations of 200 characters)."""
    st.subheader("Layer-skip: acceptance against the number of draft layers")
    target, _ = models_or_stop()
    c = st.columns([2, 1], vertical_alignment="bottom")
    T = c[0].select_slider("Temperature", [0.0, 0.5, 0.8, 1.0], value=0.0, key="atlas_sweep_t")
    if c[1].button("Measure", key="atlas_sweep", help=f"One layer-skip run per n on “{SWEEP_PRESET}”, K = 4, "
                   "200 characters, seed 0.") or st.session_state.get("atlas_swept"):  # fmt: skip
        st.session_state.atlas_swept = True
        with st.spinner("Generating with 1, 2 and 3 draft layers..."):
            rows = _sweep(T, target)
        chart(charts.layer_sweep_figure(rows, target.config.n_layer), "atlas_layer_sweep")
