"""Read vLLM's numbers: a vLLM server's /metrics snapshot, uploaded or pasted, on the app's curves. Every number
comes from specviz.teaching.vllm, every figure from specviz.charts.vllm. The page opens on the example snapshot
and keeps the last snapshot it could read: a file or text it cannot read is one line, and the charts stay."""

import streamlit as st

from specviz.charts import vllm as charts
from specviz.core.markup import md
from specviz.teaching import vllm
from ui.common import page_setup, question
from ui.widgets import chart

EXAMPLE = "the example snapshot"


def adopt(source: str, data: bytes | str) -> str | None:
    """Read ``data``; keep it as the page's snapshot if it reads. -> the one line saying why not, or None."""
    try:
        text = vllm.read_text(data)
        vllm.parse_snapshot(text)
    except vllm.SnapshotError as e:
        return f"{source[:1].upper()}{source[1:]} was not read, and the page still shows {st.session_state.vllm_source}: {e}"
    st.session_state.vllm_source, st.session_state.vllm_text = source, text
    return None


def inputs() -> str | None:
    """The upload, the paste box and the example button. -> a line saying why the newest input was not read."""
    state = st.session_state
    if "vllm_text" not in state:
        state.vllm_source, state.vllm_text = EXAMPLE, vllm.load_example()
    left, right = st.columns(2)
    upload = left.file_uploader("Upload a snapshot: the text of a server's /metrics, saved as a file",
                                type=["txt", "prom", "metrics"], key="vllm_file",
                                help="The text a vLLM server returns at /metrics, saved as a file: curl -s "
                                "http://localhost:8000/metrics > metrics.txt")  # fmt: skip
    right.text_area("Or paste its text", key="vllm_paste", height=120,
                    help="Paste the page /metrics returns, or just its vllm:spec_decode_ lines.")  # fmt: skip
    buttons = right.container(horizontal=True)
    pasted = buttons.button("Read the pasted text", key="vllm_read")
    example = buttons.button("Load the example", key="vllm_example",
                             help="A snapshot written from vLLM's documented format, not measured on a server.")  # fmt: skip
    error = None
    if upload is not None and state.get("vllm_file_id") != upload.file_id:  # a new file: read it once
        state.vllm_file_id = upload.file_id
        error = adopt(f"the file {upload.name}", upload.getvalue())
    if pasted:
        error = adopt("the pasted text", state.vllm_paste) if state.vllm_paste.strip() else "Paste a snapshot first."
    if example:
        error = adopt(EXAMPLE, vllm.load_example())
    return error


def costs(stats: vllm.VllmSpecStats) -> tuple[float, float, int]:
    c = st.columns(3)
    growth = c[0].number_input("Verify cost growth s per drafted token", 0.0, 5.0, 0.05, 0.01, key="vllm_growth",
                               help="A verify pass of K + 1 tokens costs v(K) = 1 + s·K one-token passes of the "
                               "target. s stays small while a pass is bound by reading the weights, as for a large "
                               "model on a GPU; this app's character model on its 2-core CPU costs about 1.35 passes "
                               "to verify 5 tokens (s ≈ 0.09), SmolLM2-135M about 1.3 (s ≈ 0.07).")  # fmt: skip
    draft = c[1].number_input("Draft cost c per drafted token", 0.0, 5.0, 0.05, 0.01, key="vllm_draft_cost",
                              help="What drafting one token costs, in one-token passes of the target: about the "
                              "draft model's size over the target's; near 0 for n-gram lookup.")  # fmt: skip
    k_max = c[2].number_input("Largest K to price", 1, vllm.MAX_POSITIONS, max(8, 2 * stats.k), 1, key="vllm_k_max",
                              help="K = 1 up to this.")  # fmt: skip
    return float(growth), float(draft), int(k_max)


def render() -> None:
    page_setup()
    st.title("Read vLLM's numbers")
    question("What do a vLLM server's own counters say about its drafts, and what K would have paid?")
    st.caption("vLLM counts, at /metrics, the rounds that carried a draft (vllm:spec_decode_num_drafts_total), the "
               "tokens drafted and accepted, and how many rounds kept their draft up to each position. The page "
               "reads them with prometheus_client's parser, sums them over models and engines, and puts them on "
               "the curves the other pages draw.")  # fmt: skip
    error = inputs()
    if error:
        st.error(md(error, 400))
    stats = vllm.parse_snapshot(st.session_state.vllm_text)  # it was read once already: it reads again
    models = ", ".join(stats.models) or "no model_name label"
    st.caption(md(f"Showing {st.session_state.vllm_source}: {stats.label_sets} label set(s) summed; models: {models}.",
                  400))  # fmt: skip
    m = st.container(horizontal=True, gap="medium")
    m.metric("Mean acceptance length", f"{stats.mean_acceptance_length:.3f}", width="content",
             help="Tokens a round emits on average, the bonus or correction included: 1 + accepted / drafts.")  # fmt: skip
    m.metric("Draft acceptance rate", f"{stats.acceptance_rate:.3f}", width="content",
             help="Accepted / drafted tokens.")  # fmt: skip
    m.metric("K (drafted tokens a round)", f"{stats.k_mean:.2f}", width="content",
             help="Draft tokens / drafts. Below vLLM's K where a drafter proposed fewer tokens.")  # fmt: skip
    m.metric("Fitted α", f"{stats.alpha:.3f}", width="content",
             help=f"The α at which (1 − α^(K+1)) / (1 − α) equals the mean acceptance length, at K = {stats.k}.")  # fmt: skip
    m.metric("Rounds (drafts)", f"{stats.drafts:,.0f}", width="content")
    if not stats.accepted_per_pos:
        st.info(f"This snapshot has no {vllm.PER_POS}, so the page cannot show acceptance by position; K = "
                f"{stats.k} is the mean draft length rounded up.")  # fmt: skip
    elif stats.unplaced:
        st.caption(f"The per-position counters hold {stats.accepted - stats.unplaced:,.0f} of the "
                   f"{stats.accepted:,.0f} accepted tokens: the snapshot was taken between two updates.")  # fmt: skip
    growth, draft, k_max = costs(stats)
    left, right = st.columns(2)
    with left:
        chart(charts.position_bars(stats), "vllm_positions")
    with right:
        chart(charts.expected_curve(stats, max(k_max, stats.k)), "vllm_curve")
    rows = vllm.k_that_pays(stats.alpha, growth, draft, k_max, stats.cut_lengths)
    chart(charts.pays_bars(rows, stats.k), "vllm_pays")
    st.caption("Each K is priced at the fitted α: its tokens a round (1 − α^(K+1)) / (1 − α) over its cost c·K + "
               "v(K), in one-token passes, against plain decoding's one token a pass. A single α assumes every "
               "position is accepted alike; the dashed line of the first chart shows how far that holds. The open "
               "circles need no α: vLLM's own rounds cut to K tokens, which keep what they accepted before the cut "
               "(a chain's token at a position does not depend on how long it goes on), so they stop at vLLM's K.")  # fmt: skip
