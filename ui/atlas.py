"""The methods atlas: every way the app drafts and verifies, in one chart and two tables, with the
figures of one bench run (docs/bench.jsonl, written by `python -m specviz bench`), each method
linked to its step page on a preset that suits it. The text lives in specviz/teaching/atlas.py."""

import statistics
import time
from pathlib import Path

import pandas as pd
import streamlit as st

from specviz.adaptive.costs import cpu_name
from specviz.bench.layer_sweep import acceptance_by_layers
from specviz.bench.rows import rows_from_jsonl
from specviz.bench.runner import QUICK, lossy_methods, run_bench
from specviz.charts import atlas as charts
from specviz.core.markup import md
from specviz.drafters import BASELINE
from specviz.teaching.atlas import BIAS, BIAS_SAMPLES, atlas_rows, bias_rows, methods
from specviz.teaching.exactness import ALPHA
from specviz.teaching.presets import preset
from ui.common import models_or_stop, other_cpu, page_setup, question
from ui.model_choice import active_model, offered_drafters, run_models
from ui.shootout import results
from ui.widgets import chart, table

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
               "--threads 1` (docs/bench.jsonl), or this machine's when measured below: medians of interleaved "
               "repeats against plain decoding in the same run. A character model of 3M parameters on a 2-core CPU is "
               "not Vicuna-7B on a GPU: a target pass costs little more than a draft, so gains are smaller than the papers'.")  # fmt: skip
    if (model := active_model()).real:  # the figures are the character model's; say which drafters run on this one
        names = ", ".join(offered_drafters(run_models(model)[0]))
        st.info(f"The sidebar's model is {md(model.label(), 80)}: the figures below are the character GPT's, and on "
                f"this model the app runs {names} (Step through, the lesson and the tree page use it).")  # fmt: skip
    try:
        rows = [r for r in bench_rows(BENCH.read_text()) if r["suite"] != "batch"]  # the batch bench: its own page
    except (OSError, ValueError) as e:
        st.error(
            f"No bench run to show ({e}). Write one: python -m specviz bench --threads 1 --json > docs/bench.jsonl"
        )
        return
    rows = figures_source(rows)
    by_method = atlas_rows(rows)
    chart(charts.speedup_figure(by_method), "atlas_speedup")
    T = st.segmented_control("Figures at", charts.TEMPERATURES, format_func=lambda T: f"T = {T:g}", default=0.0,
                             required=True, key="atlas_t", help="The bench ran every method at both temperatures; "
                             "the chart above shows both speedups.")  # fmt: skip
    view = {h: {"width": charts.FIGURE_WIDTHS[h], "format": "%.2f"} for h in charts.FIGURES}
    view |= {"method": {"width": charts.METHOD_WIDTH}, "open": {"link": "step", "width": charts.OPEN_WIDTH}}
    table(charts.figures_frame(by_method, T), charts.FIGURE_HELP | {"open": charts.OPEN_HELP}, view)
    st.caption("α: acceptance rate, accepted / drafted characters checked. τ: tokens per target forward pass, the "
               "speedup if drafting and verifying were free. Speedup: plain decoding's time over the method's. c: the "
               "draft cost, one drafted token's time in target forward passes. MB: megabytes of memory the method "
               "adds.")  # fmt: skip
    st.markdown("**Where each draft comes from**")
    view = {h: {"width": charts.SOURCE_WIDTHS[h]} for h in charts.SOURCES}
    table(charts.sources_frame(by_method), charts.SOURCE_HELP, view, row_height=charts.SOURCES_ROW_HEIGHT)
    bias_table()
    with st.expander("The bench rows behind the atlas"):
        results(rows)
    layer_sweep()


@st.cache_resource(show_spinner=False, max_entries=2)
def _bias(samples: int) -> dict:
    """The server's bias table, once measured: every session sees it (it depends on the models and the code only)."""
    return {}


BIAS_HELP = {
    "verdict": "The Exactness lab's verdict: biased when the test rejects the target's distribution at the level shown.",
    "p-value": "How likely frequencies this far from the exact ones are from an exact rule: tiny means biased.",
    "total variation": "Half the summed gap between the first characters' frequencies and their exact probabilities.",
    "runs": "Sampled runs of K + 1 characters.",
}


def bias_table() -> None:
    """The lossy methods' speed (hatched above) beside what it costs: the exactness lab's verdict on each,
    measured on the button (about a minute) and kept for every session of this server."""
    st.markdown("**What the lossy rules' speed costs: their bias**")
    lossy = [m.name for m in methods() if not m.lossless]
    st.caption(md(f"The Exactness lab on each lossy method ({', '.join(lossy)}): {BIAS_SAMPLES} runs of K + 1 = "
                  f"{BIAS['k'] + 1} characters at T = {BIAS['temperature']:g} on its own preset, tested at every "
                  f"position against the target's exact distribution, at level {ALPHA}. Total variation: how far "
                  "the first characters' frequencies are from the exact probabilities (sampling noise alone gives an "
                  "exact rule some too, at this many runs)."))  # fmt: skip
    kept = _bias(BIAS_SAMPLES)
    if "rows" not in kept and st.button("Test the lossy rules", key="atlas_bias"):
        target, tiny = models_or_stop()
        bar = st.progress(0.0, text="Starting...")
        try:
            kept["rows"] = bias_rows(target, tiny.model, progress=lambda done, total: bar.progress(
                done / total, text=f"{done} of {total} methods tested"))  # fmt: skip
        except (ValueError, RuntimeError) as e:
            st.error(f"The test could not run: {md(e)}")
        finally:
            bar.empty()
    if "rows" in kept:
        table(pd.DataFrame(kept["rows"]), BIAS_HELP, {"p-value": {"format": "%.2g"},
                                                       "total variation": {"format": "%.2f"}})  # fmt: skip


@st.cache_resource(show_spinner=False, max_entries=8)
def _this_machine(cpu: str) -> dict:
    """The server's measurement of this machine (keyed by its CPU): every session sees it once taken."""
    return {}


def _spread(rows: list[dict]) -> str:
    """The run-to-run spread, from what the rows hold: the repeats' min–max speedups where recorded,
    else the baseline against itself (the A/A run: what noise alone gives)."""
    ranges = sorted(r["speedup_max"] - r["speedup_min"] for r in rows if r.get("speedup_min") is not None)
    aa = [r["aa_speedup"] for r in rows if r.get("aa_speedup") is not None]
    if ranges:
        return (f" From run to run a method's speedup moved by {statistics.median(ranges):.2f}× (median of the "
                f"min–max ranges over the {rows[0]['repeats']} repeats; widest {ranges[-1]:.2f}×).")  # fmt: skip
    if aa:
        return (f" The run kept each method's median only; plain decoding timed against itself gave "
                f"{min(aa):.3f}–{max(aa):.3f}×: what noise alone does.")  # fmt: skip
    return ""


def _where(rows: list[dict], now: bool) -> str:
    run = rows[0]
    here = cpu_name()
    if now:
        return (f"Measured just now on this machine: {here}, {run['threads']} thread(s), the bench's quick suite "
                f"({run['prompts']} prompts × {run['new_tokens']} characters), median of {run['repeats']} interleaved "
                "runs.")  # fmt: skip
    cpu = run.get("cpu") or "a CPU it did not record"  # figures differ from one CPU to another
    date = run.get("date") or "a date it did not record"
    text = (f"A stored run: {run['version']} on {cpu}, {date}, {run['threads']} thread(s), load average "
            f"{run['load_average']}, {run['prompts']} prompts × {run['new_tokens']} characters, median of "
            f"{run['repeats']} interleaved runs.")  # fmt: skip
    return text + other_cpu(run.get("cpu"))


def figures_source(stored: list[dict]) -> list[dict]:
    """The rows the atlas shows: the stored run's, or this machine's once measured (the button); the
    caption says which, where and when, and how much the figures moved from run to run."""
    mine = _this_machine(cpu_name()).get("rows") or st.session_state.get("atlas_measured")
    source = "stored"
    if mine:
        source = st.segmented_control("Figures from", ["this machine", "stored"], default="this machine",
                                      required=True, key="atlas_source", format_func=lambda s: {
                                          "this machine": "this machine, just now", "stored": "the stored run"}[s])  # fmt: skip
    rows = mine if source == "this machine" else stored
    st.caption(md(_where(rows, source == "this machine")) + md(_spread(rows)))
    if not mine:
        measure_here()
    return rows


def measure_here() -> None:
    """A button: the bench's quick suite for the atlas's methods on this machine, with a progress bar."""
    names = sorted({m.drafter for m in methods()})
    # run_bench's count: each drafter at K = 4 and adaptive at both temperatures (the baseline once), the
    # lossy rules at T = 0.8, and the baseline's second (A/A) run
    drafters = len({BASELINE, *names})
    n = QUICK["repeats"] * len(QUICK["prompts"]) * (4 * drafters + len(lossy_methods()))
    go = st.button("Measure this machine", key="atlas_measure")
    st.caption(f"The bench's quick suite on {md(cpu_name())}: {n} short generations ({QUICK['max_new_tokens']} "
                 "characters each), one to three minutes on a shared 2-core machine; the bar shows the time left.")  # fmt: skip
    if not go:
        return
    target, tiny = models_or_stop()
    bar, start = st.progress(0.0, text="Starting..."), time.perf_counter()

    def tick(done: int, total: int) -> None:
        elapsed = time.perf_counter() - start
        left = f", about {elapsed / done * (total - done):.0f} s left" if done >= 10 else ""
        bar.progress(done / total, text=f"Run {done} of {total}: {elapsed:.0f} s so far{left}")

    try:
        rows = run_bench(target, tiny, [preset(p) for p in QUICK["prompts"]], names, k=4,
                         max_new_tokens=QUICK["max_new_tokens"], repeats=QUICK["repeats"], progress=tick, auto=True,
                         lossy=True)  # fmt: skip
    except (ValueError, RuntimeError) as e:
        st.error(f"The measurement could not run: {md(e)}")
        return
    finally:
        bar.empty()
    st.session_state.atlas_measured = rows
    _this_machine(cpu_name())["rows"] = rows
    st.rerun()


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
                   "200 characters, the same random seed for every n.") or st.session_state.get("atlas_swept"):  # fmt: skip
        st.session_state.atlas_swept = True
        with st.spinner("Generating with 1, 2 and 3 draft layers..."):
            rows = _sweep(T, target)
        chart(charts.layer_sweep_figure(rows, target.config.n_layer), "atlas_layer_sweep")
