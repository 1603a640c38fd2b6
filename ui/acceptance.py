"""Acceptance math: the speculative-sampling toy, with no model. Shape p and q with the sliders; the page shows
what one accept/reject step accepts, what it redraws from, and a simulation of many steps whose
output converges to p. Every number comes from specviz.teaching.toy; every figure from specviz.charts.toy."""

import streamlit as st

from specviz.charts import toy as charts
from specviz.teaching import toy
from specviz.teaching.exactness import ALPHA
from specviz.teaching.stats import p_value_sentence
from ui.common import page_setup, question
from ui.widgets import chart

STEPS = [100, 1_000, 5_000, 20_000, 100_000]
RULES = {"residual": "correct: redraw from the residual", "p": "mistake: redraw from p"}


@st.cache_data(max_entries=32, show_spinner=False)
def simulation(params: tuple, n: int, seed: int) -> dict:
    """Both correction rules over the same n steps; cached so moving a chart's slider back is instant."""
    p, q = toy.make_pair(*params)
    out = {}
    for rule in toy.CORRECTIONS:
        sim = toy.simulate(p, q, n, seed, rule)
        out[rule] = {"freq": toy.histogram(sim.tokens, len(p)), "curve": toy.convergence(sim.tokens, p),
                     "fit": toy.fit(sim.tokens, p), "accepted": sim.accepted, "limit": toy.tv(toy.output_distribution(p, q, rule), p)}  # fmt: skip
    return out


def metric_row():
    """Metrics side by side, each as wide as its figure, wrapping rather than cutting a label."""
    return st.container(horizontal=True, gap="medium")


def controls() -> tuple:
    # Two rows of three: at 1024 px beside the sidebar, six columns cut the labels ("Draft temperatu re").
    c = st.columns(3) + st.columns(3)
    shape = c[0].radio("Target shape", toy.SHAPES, horizontal=True, key="toy_shape",
                       help="random: the speculative-sampling toy's (rand − 0.5) × 3 logits. bump: one smooth peak.")  # fmt: skip
    V = c[1].slider("Vocabulary size V", 4, 64, 32, key="toy_v")
    sharpness = c[2].slider("Sharpness of p", 0.0, 5.0, 1.0, 0.1, key="toy_sharpness",
                            help="Multiplies the target's logits: 0 is uniform, large is peaked.")  # fmt: skip
    temperature = c[3].slider("Draft temperature", 0.0, 3.0, 0.5, 0.05, key="toy_temperature",
                              help="q ∝ p^(1/T): below 1 the draft is over-confident (the toy uses 0.5), "
                              "1 copies p, 0 always drafts p's argmax.")  # fmt: skip
    shift = c[4].slider("Shift q by", -32, 32, 0, key="toy_shift",
                        help="Move q's mass this many tokens to the right (wrapping around).")  # fmt: skip
    seed = c[5].number_input("Seed", 0, 2**31 - 1, 0, key="toy_seed", disabled=shape != "random",
                             help="Draws the random target.")  # fmt: skip
    return V, shape, sharpness, temperature, shift, int(seed)


def render() -> None:
    page_setup()
    st.title("Acceptance math")
    question("Why does accepting with probability min(1, p/q), and redrawing from the residual, give exactly p?")
    st.caption("The speculative-sampling toy of Leviathan et al. and Chen et al.'s rule, with no model: a target distribution p and a draft distribution q over a small "
               "vocabulary. A draft x ~ q is accepted with probability min(1, p(x)/q(x)); on rejection a token is "
               "drawn from the residual norm(max(0, p − q)). The output is then distributed exactly as p.")  # fmt: skip
    params = controls()
    try:
        p, q = toy.make_pair(*params)
    except ValueError as e:
        st.error(str(e))
        st.stop()
    o = toy.overlap(p, q)
    m = metric_row()
    m.metric(
        "Acceptance rate α = Σ min(p, q)",
        f"{o.alpha:.4f}",
        help="The probability that one draft is accepted.",
        width="content",
    )
    m.metric("Rejection rate 1 − α", f"{1 - o.alpha:.4f}", help="= Σ max(0, p − q), the residual's mass.",
             width="content")  # fmt: skip
    m.metric(
        "Total variation TV(p, q)", f"{toy.tv(p, q):.4f}", help="½ Σ |p − q|; always equal to 1 − α.", width="content"
    )
    m.metric("Expected tokens per round, K = 4", f"{toy.expected_tokens_per_round(o.alpha, 4):.3f}", width="content")
    left, right = st.columns(2)
    with left:
        chart(charts.overlap_bars(p, q, o), "toy_overlap")
    with right:
        chart(charts.residual_bars(o), "toy_residual")
    st.markdown(
        "**Why the output is p.** A token x comes out of one step in two ways: drafted and accepted, with probability "
        "q(x) · min(1, p(x)/q(x)) = min(p(x), q(x)); or drawn after a rejection, with probability "
        "(1 − α) · max(0, p(x) − q(x)) / (1 − α) = max(0, p(x) − q(x)). The two add up to p(x)."
    )

    st.subheader("Simulate many steps")
    c = st.columns([2, 1, 3])
    n = c[0].select_slider("Steps", STEPS, value=5_000, key="toy_steps", format_func=lambda v: f"{v:,}")
    sim_seed = int(c[1].number_input("Simulation seed", 0, 2**31 - 1, 0, key="toy_sim_seed"))
    sims = simulation(params, n, sim_seed)
    ok = sims["residual"]
    stat, dof, p_value = ok["fit"]
    m = metric_row()
    m.metric("Accepted drafts", f"{float(ok['accepted'].double().mean()):.4f}", help=f"Expected: α = {o.alpha:.4f}",
             width="content")  # fmt: skip
    m.metric("TV(output, p)", f"{ok['curve'][-1][1]:.4f}", help="Shrinks like 1/√n: sampling noise only.",
             width="content")  # fmt: skip
    m.metric(f"Chi-square against p, {dof} degrees of freedom", f"{stat:.1f}", width="content")
    m.metric("p-value", "–" if p_value is None else f"{p_value:.3g}", width="content",
             help=f"Below {ALPHA} would mean the output is not p.")  # fmt: skip
    st.caption(p_value_sentence(p_value, "the output", "p", ALPHA))
    left, right = st.columns(2)
    with left:
        chart(charts.histogram_bars(ok["freq"], p, n, ok["curve"][-1][1]), "toy_histogram")
    with right:
        curves = {RULES[r]: sims[r]["curve"] for r in toy.CORRECTIONS}
        chart(
            charts.convergence_chart(curves, {RULES[r]: sims[r]["limit"] for r in toy.CORRECTIONS}), "toy_convergence"
        )
    bad = sims["p"]
    st.caption(f"The mistake — redrawing from p after a rejection — emits min(p, q) + (1 − α)·p: it over-produces the "
               f"tokens the draft likes. Its TV to p levels off at {bad['limit']:.4f} (chi-square p-value "
               f"{'–' if bad['fit'][2] is None else format(bad['fit'][2], '.3g')} here) while the correct rule keeps falling.")  # fmt: skip

    st.subheader("Tokens per round")
    st.markdown("If every draft position is accepted independently with probability α and the round stops at its first "
                "rejection, a round with K drafts emits (1 − α^(K+1)) / (1 − α) tokens on average: its accepted drafts, "
                "plus the correction or the bonus. The measured points cut the simulated accept flags into such rounds.")  # fmt: skip
    chart(charts.tokens_per_round_chart(toy.per_k(o.alpha, ok["accepted"]), o.alpha), "toy_per_k")
