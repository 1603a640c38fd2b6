"""Why does speculation get slower on a busy server? The stored batch bench's speedup against the batch size
(docs/bench.jsonl, suite "batch") with the crossover marked, this machine's roofline beside it, one round of
every sequence of a batch, the K adaptive K chooses at each batch size, and a closing paragraph in the stored
run's numbers. Every number comes from specviz/ (teaching/load.py, bench/roofline.py, charts/batch.py)."""

import streamlit as st

from specviz.adaptive.load import DECAY_LOADED, LOADED_FROM, kept, memory
from specviz.adaptive.policy import DECAY
from specviz.bench.batch import DRAFTERS
from specviz.bench.roofline import roofline
from specviz.charts.batch import crossover_figure, roofline_figure
from specviz.core.choice import MIN_GAIN
from specviz.core.markup import md
from specviz.teaching import load
from ui.atlas import BENCH, bench_rows
from ui.common import machine_costs, models_or_stop, other_cpu, page_setup, question
from ui.model_choice import character_content
from ui.widgets import chart, table

CONTEXT = 150  # cache entries a sequence attends to, about the bench's (its prompts and half its tokens)
SIZES = (1, 2, 4, 8, 16, 32, 64)


@st.cache_resource(show_spinner="Measuring this CPU's multiply-add rate and memory bandwidth (~2 s)...")
def machine_roofline():
    target, _ = models_or_stop()
    return roofline(target.model)


def kept_load_curve():
    """The batched rounds' costs the batch bench measured on this machine (.cache/load), or None."""
    target, _ = models_or_stop()
    return kept(target)


def render() -> None:
    page_setup()
    st.title("Why does speculation get slower on a busy server?")
    character_content("This page runs the character GPT: its roofline and its one round of a batch. The chart's "
                      "lines are the stored batch bench, the character GPT's and, marked with the model's name, a "
                      "real model's where the bench ran on one.")  # fmt: skip
    question("Speculative decoding made it slower: why, and when?")
    try:
        stored = bench_rows(BENCH.read_text())
    except (OSError, ValueError) as e:
        stored, why = [], md(e)
        st.error(f"No bench run to show ({why}).")
    rows = load.batch_rows(stored)  # the character model's; the chart adds a real model's lines
    if rows:
        first = rows[0]
        st.caption(md(f"A stored run of the batch bench (python -m specviz bench --batch): {first['cpu']}, {first['date']}, "
                      f"{first['threads']} thread(s), load average {first['load_average']} ({load.machine(first)}), "
                      f"{first['new_tokens']} characters a sequence, {first.get('waves') or 1} sequence(s) a slot in turn "
                      f"(a finished sequence's slot takes the next, as on a server), median of {first['repeats']} "
                      "interleaved repeats; bars: their min–max. τ: tokens per target forward pass.") + other_cpu(first["cpu"]))  # fmt: skip
    chart(crossover_figure(load.batch_rows(stored, every_model=True)), "load_speedup")
    roof = machine_roofline()
    chart(roofline_figure(roof, rows, CONTEXT), "load_roofline")
    st.caption(f"Measured on this machine just now: the products' kernel reaches {roof.peak_flops / 1e9:.0f} "
               f"Gflop/s, one thread reads memory at {roof.bandwidth / 1e9:.1f} GB/s. A pass whose arithmetic "
               f"intensity (flops per byte read) is under {roof.ridge:.1f} waits on memory: more rows cost almost "
               "nothing. Past it, every row costs its arithmetic. Each sequence's keys and values are read too, so "
               "plain decoding's passes stay under the ridge; speculation's, several rows a sequence, cross it.")  # fmt: skip

    st.subheader("One round of a batch")
    target, tiny = models_or_stop()
    c = st.columns(2)
    drafter = c[0].selectbox("Drafter", DRAFTERS, key="load_drafter")
    B = c[1].slider("Sequences in the batch (B)", 1, 16, 4, key="load_batch",
                    help="Each sequence decodes its own prompt with its own drafter and cache; one target pass "
                    "verifies every sequence's draft.")  # fmt: skip
    seqs, carried = load.one_round(target, tiny, drafter, B)
    table(load.frame(seqs))
    st.caption(f"The one target pass carried {carried} rows for {B} sequence(s); plain decoding would send {B}. "
               "Each sequence accepted its own number of tokens and trimmed its own cache.")  # fmt: skip

    st.subheader("The K adaptive K chooses at each batch size")
    base = {r["drafter"]: r for r in rows if r["batch"] == 1 and not r.get("k_auto")}
    alpha = (base.get(drafter) or {}).get("acceptance_rate") or 0.5
    measured = kept_load_curve()
    prices = measured or (lambda r, s: roof.seconds(r, s, CONTEXT))
    ks = load.chosen_k(drafter, alpha, machine_costs(), prices, SIZES)
    table(load.frame([{"batch size B": b, "K chosen": k} for b, k in ks]))
    how = ("this machine's batched rounds as the batch bench measured them (a sequence's share of the pass and "
           "the CPU its own round costs beside it)" if measured else
           "this machine's roofline (the pass only: run the batch bench to measure the rounds themselves)")  # fmt: skip
    st.caption(md(f"For {drafter} at the stored run's acceptance rate α = {alpha:.2f}, priced on {how}, with "
                  f"the drafting each sequence does on its own: a draft must promise {MIN_GAIN:.2f}× plain decoding's "
                  f"tokens per unit of time. In a batch of {LOADED_FROM} or more, a sequence running adaptive K "
                  f"estimates α over about its last {memory(DECAY_LOADED)} rounds, not {memory(DECAY)}: there the "
                  "price sits near a drafter's usual α, and a short memory would draft whenever its estimate ran "
                  "high by chance."))  # fmt: skip

    st.subheader("So why does it get slower?")
    st.markdown(md(load.closing(rows)) if rows else "Run the batch bench to see the answer in this machine's numbers.")
