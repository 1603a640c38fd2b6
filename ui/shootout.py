"""Drafter shoot-out: every drafter on the sidebar's prompt and seed, timed in one run."""

import statistics
import time
from dataclasses import replace

import streamlit as st

from specviz.adaptive.costs import cpu_name
from specviz.bench.rows import rows_from_jsonl
from specviz.bench.shootout import SWEEP_KS, draft_cost_per_round, run_shootout
from specviz.charts import shootout as charts
from specviz.charts.parallel import cost_by_k_figure
from specviz.core.markup import md
from specviz.drafters import BASELINE
from specviz.teaching.agreement import bench_figure, row_figure, tally
from specviz.verifiers import LOSSLESS
from ui.common import models_or_stop, page_setup, question, stored_bench
from ui.controls import previous_run_note, valid_spec
from ui.widgets import chart, table

QUICK_TOKENS = 100  # the quick run's characters per generation: about 20 s on a shared 2-core machine


def plan(spec, full: bool) -> dict:
    """What a run measures: the full sweep (every K, the sidebar's characters, the alternative rules) or
    the quick one (the sidebar's K, at most QUICK_TOKENS characters, token-wise verification only)."""
    s = spec.settings
    if full:
        return {"ks": SWEEP_KS, "settings": s, "compare_rules": True}
    return {"ks": (s.k,), "settings": replace(s, max_new_tokens=min(s.max_new_tokens, QUICK_TOKENS)),
            "compare_rules": False}  # fmt: skip


def measure(spec, full: bool) -> None:
    """Run the shoot-out for a valid ``spec`` with a progress bar and an estimate of the time left (from
    the runs so far); results are kept per settings."""
    target, tiny = models_or_stop()
    bar = st.progress(0.0, text="Starting (the first runs load every drafter)...")
    start = time.perf_counter()

    def tick(done: int, total: int) -> None:
        elapsed = time.perf_counter() - start
        left = f", about {elapsed / done * (total - done):.0f} s left" if done >= 5 else ""
        bar.progress(done / total, text=f"Run {done} of {total}: {elapsed:.0f} s so far{left}")

    p = plan(spec, full)
    try:
        result = run_shootout(target, tiny, spec.prompt, p["settings"], p["ks"], progress=tick,
                              compare_rules=p["compare_rules"])  # fmt: skip
    except ValueError as e:
        st.error(f"The shoot-out could not run: {md(e)}")
        return
    finally:
        bar.empty()
    result.measured = {"seconds": time.perf_counter() - start, "cpu": cpu_name(), "full": full,
                       "tokens": p["settings"].max_new_tokens, "ks": sorted({*p["ks"], spec.settings.k})}  # fmt: skip
    st.session_state.setdefault("shootout", {})[key(spec)] = result


def provenance(result) -> None:
    """Where the figures came from: this machine, now, how many runs, and their run-to-run spread."""
    m = getattr(result, "measured", None)  # a result kept from before the page recorded it: none
    if not m:
        return
    at_k = [r for r in result.rows if r["k"] == result.k and r.get("speedup_min") is not None]
    widths = sorted((r["speedup_max"] - r["speedup_min"], r["drafter"]) for r in at_k)
    spread = (f" From run to run a drafter's speedup moved by {statistics.median(w for w, _ in widths):.2f}× "
              f"(median of the min–max ranges over the repeats; widest: {widths[-1][1]}, {widths[-1][0]:.2f}×)."
              if widths else "")  # fmt: skip
    what = "the full sweep" if m["full"] else "the quick run"
    st.caption(md(f"Measured just now on this machine: {m['cpu']}, {what}: every drafter at K = "
                  f"{', '.join(map(str, m['ks']))}, {m['tokens']} characters each, median of {at_k[0]['repeats'] if at_k else 3} "
                  f"interleaved runs, in {m['seconds']:.0f} s.") + spread + " " + md(against_stored(result.rows, result.k)))  # fmt: skip


def against_stored(rows: list[dict], k: int) -> str:
    """This run's drafters against the atlas's stored run at the same K and temperature (specviz/teaching/agreement.py)."""
    stored, pairs = stored_bench(), []
    for r in rows:
        lossless = r.get("verification", LOSSLESS) == LOSSLESS
        if r["k"] == k and r["drafter"] != BASELINE and lossless and (here := row_figure(r, "this run")) is not None:
            there = bench_figure(stored, r["drafter"], r["temperature"], k, False, "the atlas's stored run")
            if there is not None:
                pairs.append((r["drafter"], here, there))
    return tally(pairs)


def results(rows: list[dict]) -> None:
    """The bench rows in two tables that fit the page: how fast, and where the time went."""
    table(charts.results_frame(rows, charts.SPEED), charts.RESULTS_HELP, charts.RESULTS_VIEW)
    table(charts.results_frame(rows, charts.COST), charts.RESULTS_HELP, charts.RESULTS_VIEW)
    st.caption(charts.RESULTS_LEGEND)


def key(spec) -> tuple:
    s = spec.settings
    return spec.prompt, s.temperature, s.k, s.max_new_tokens, s.seed


def show(result) -> None:
    provenance(result)
    at_k = [r for r in result.rows if r["k"] == result.k]
    results(at_k)
    c = st.columns(2)
    with c[0]:
        chart(charts.speedup_bars(at_k, f"Speedup, K={result.k}", "beside tokens per forward pass, the ideal"),
              "so_speedup")  # fmt: skip
    with c[1]:
        chart(charts.expected_vs_measured(at_k), "so_expected")
    chart(charts.k_sweep(result.rows), "so_sweep")  # a line per drafter: full width, for the legend
    if costs := draft_cost_per_round(result.rows):
        chart(cost_by_k_figure(costs), "so_cost_by_k")
        st.caption("A chain drafter runs its network once per drafted token: its cost per round climbs with K. A "
                   "parallel drafter fills all K slots in one pass: flat. (The drafters that run a network, at "
                   f"T = {result.rows[0]['temperature']}; target passes: draft time per round over one baseline "
                   "forward pass, measured in this run.)")  # fmt: skip
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
        results(result.rows)


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
    results(rows)


def render() -> None:
    page_setup()
    st.title("Drafter shoot-out")
    top = st.container()  # where a real model's one sentence goes: the words below are the character model's
    question("Which drafter is fastest on this prompt, and why?")
    st.caption("Every drafter (knobs at their defaults) on the sidebar's prompt, seed and temperature, timed against "
               "plain decoding in the same run: 3 repeats interleaved, medians reported. The quick run takes the "
               f"sidebar's K and at most {QUICK_TOKENS} characters (about 20 s on a 2-core machine); the full sweep "
               f"also sweeps K over {', '.join(map(str, SWEEP_KS))}, generates the sidebar's max new tokens and compares "
               "the alternative verification rules (about a minute).")  # fmt: skip
    # says what is wrong with a bad prompt; None then
    valid = valid_spec(models_or_stop()[0], "The drafter shoot-out", top)
    spec = valid[0] if valid else st.session_state.spec
    if valid is None and (kept := st.session_state.get("shootout")):
        shown = key(spec) if key(spec) in kept else list(kept)[-1]
        previous_run_note(st.session_state.ctl_prompt, shown[0], "The shoot-out shown")
    c = st.columns([1, 2], vertical_alignment="center")
    full = c[1].toggle("Full sweep", key="shootout_full", help=f"K = {', '.join(map(str, SWEEP_KS))} and the sidebar's, "
                       "the sidebar's max new tokens, and the alternative rules: about a minute.")  # fmt: skip
    if c[0].button("Run the shoot-out", type="primary", key="shootout_run", disabled=valid is None):
        measure(spec, full)
    results = st.session_state.get("shootout", {})
    if key(spec) in results:
        show(results[key(spec)])
    elif results:
        st.info("The settings changed since the last shoot-out; the last results are below. Run it again for these.")
        show(list(results.values())[-1])
    else:
        st.info(
            "Press **Run the shoot-out**: the quick run takes about 20 s on a 2-core machine, the full sweep "
            "about a minute; the bar shows the time left."
        )
    from_file()
