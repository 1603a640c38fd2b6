"""Drafter shoot-out: every drafter on the sidebar's prompt and seed, timed in one run."""

import streamlit as st

from specviz.bench.rows import rows_from_jsonl
from specviz.bench.shootout import SWEEP_KS, run_shootout
from specviz.charts import shootout as charts
from specviz.core.markup import md
from ui.common import models_or_stop, page_setup, question
from ui.controls import valid_spec
from ui.widgets import chart, table


def measure(spec) -> None:
    """Run the shoot-out for a valid ``spec`` with a progress bar; results are kept per settings."""
    target, tiny = models_or_stop()
    bar = st.progress(0.0, text="Starting...")
    try:
        result = run_shootout(target, tiny, spec.prompt, spec.settings,
                              progress=lambda done, total: bar.progress(done / total, text=f"Run {done} of {total}"))  # fmt: skip
    except ValueError as e:
        st.error(f"The shoot-out could not run: {md(e)}")
        return
    finally:
        bar.empty()
    st.session_state.setdefault("shootout", {})[key(spec)] = result


def key(spec) -> tuple:
    s = spec.settings
    return spec.prompt, s.temperature, s.k, s.max_new_tokens, s.seed


def show(result) -> None:
    at_k = [r for r in result.rows if r["k"] == result.k]
    table(charts.results_frame(at_k), charts.RESULTS_HELP, charts.RESULTS_VIEW)
    c = st.columns(2)
    with c[0]:
        chart(charts.speedup_bars(at_k, f"Speedup, K={result.k}", "beside tokens per forward pass, the ideal"),
              "so_speedup")  # fmt: skip
    with c[1]:
        chart(charts.expected_vs_measured(at_k), "so_expected")
    chart(charts.k_sweep(result.rows), "so_sweep")  # a line per drafter: full width, for the legend
    chart(charts.position_lines(result.by_position), "so_positions")
    chart(charts.model_vs_measured(at_k), "so_model")
    if result.rules:
        st.subheader(f"Token-wise or {result.chain_rule} verification, chain drafters")
        rule = result.chain_rule
        table(charts.rules_frame(result.rules, rule), charts.rules_help(rule), charts.rules_view(rule))
        chart(charts.rules_bars(result.rules, result.k, result.chain_rule), "so_rules")
        st.caption(charts.RULES_EXPLAIN)
    if getattr(result, "tree_rules", None):  # a result kept from before traversal rows had none
        st.subheader(f"Token-wise or {result.tree_rule} verification, tree drafters")
        rule = result.tree_rule
        table(charts.rules_frame(result.tree_rules, rule), charts.rules_help(rule), charts.rules_view(rule))
        chart(charts.rules_bars(result.tree_rules, result.k, result.tree_rule), "so_tree_rules")
        st.caption(charts.TREE_RULES_EXPLAIN)
    st.caption("c: time to draft one token, v: time of one verification pass, both relative to one baseline "
               "forward pass, measured in this run. The model ignores the time spent accepting and recording.")  # fmt: skip
    with st.expander("Every K"):
        table(charts.results_frame(result.rows), charts.RESULTS_HELP, charts.RESULTS_VIEW)


def from_file() -> None:
    upload = st.file_uploader("Or show a benchmark file (`python -m specviz bench --json > bench.jsonl`)",
                              type=["jsonl", "json", "txt"])  # fmt: skip
    if upload is None:
        return
    try:
        rows = rows_from_jsonl(upload.getvalue().decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        st.error(f"{md(upload.name, 120)} is not a benchmark file: {md(e, 300)}")
        return
    for T in sorted({r["temperature"] for r in rows}):
        mine = [r for r in rows if r["temperature"] == T and r["impl"] == "specviz" and r["suite"] == "main"]
        if mine:
            chart(charts.speedup_bars(mine, upload.name[:120], f"T={T}, K={mine[0]['k']}"), f"file_{T}")
    st.dataframe(charts.results_frame(rows), hide_index=True)


def render() -> None:
    page_setup()
    st.title("Drafter shoot-out")
    question("Which drafter is fastest on this prompt, and why?")
    st.caption(f"Every drafter (knobs at their defaults) on the sidebar's prompt, seed, temperature and max new tokens, "
               f"timed against plain decoding in the same run: repeats interleaved, medians reported, "
               f"K swept over {', '.join(map(str, SWEEP_KS))} and the sidebar's K.")  # fmt: skip
    valid = valid_spec(models_or_stop()[0])  # says what is wrong with a bad prompt; None then
    spec = valid[0] if valid else st.session_state.spec
    if st.button("Run the shoot-out", type="primary", key="shootout_run", disabled=valid is None):
        measure(spec)
    results = st.session_state.get("shootout", {})
    if key(spec) in results:
        show(results[key(spec)])
    elif results:
        st.info("The settings changed since the last shoot-out; the last results are below. Run it again for these.")
        show(list(results.values())[-1])
    else:
        st.info("Press **Run the shoot-out**: it takes well under a minute at the default settings.")
    from_file()
