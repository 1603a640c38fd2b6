"""Exactness lab: N speculative generations of K + 1 characters, for the sidebar's drafter,
temperature, K and verification rule, tested against the target's exact distribution at every
position (so every draft position 1..K), and the first few characters against their exact joint
distribution (computed by enumeration). Any drafter and verification rule the sidebar allows:
the lossless ones (token-wise, block) pass; the lossy ones (NASD's own rule, "nasd-seed", the
deliberately wrong "replacement-mismatch") fail once N is large enough. See specviz.teaching.exactness.

Runs only on the button, with a progress bar; results are kept per browser session, keyed by
everything that defines them, so coming back to the same settings is instant."""

import time

import streamlit as st

from specviz.charts import exactness as charts
from specviz.core.markup import md
from specviz.core.record import worded
from specviz.drafters import drafter_class
from specviz.teaching.exactness import ALPHA, MAX_SAMPLES, chi_square, rule_sentence, run_exactness, verdict
from specviz.teaching.presets import preset
from specviz.verifiers import LOSSLESS, VERIFIERS
from ui.common import page_setup, question
from ui.controls import FREE_TEXT, previous_run_note, valid_spec
from ui.model_choice import active_model, run_models
from ui.widgets import chart

KEEP = 8  # results kept per browser session
BIASED = next(v for v in VERIFIERS.values() if not v.lossless and v.showcase)  # the first lossy rule the atlas shows
_DEMO_DRAFTER = drafter_class(BIASED.showcase[0])
DEMO = {"ctl_drafter": _DEMO_DRAFTER.name, "ctl_temperature": 1.0, "ctl_k": 4, "ctl_preset": _DEMO_DRAFTER.preset}


def _key(spec, samples: int, n_tokens: int) -> tuple:
    return spec.settings, spec.prompt, samples, n_tokens, active_model()


def _set_verification(value: str, demo: bool) -> None:
    st.session_state.ctl_verification = value
    if demo:
        st.session_state.update(DEMO, ctl_prompt=preset(DEMO["ctl_preset"]).text)


def _keep_last(text: str) -> None:
    st.session_state.ctl_prompt = text
    st.session_state.ctl_preset = FREE_TEXT


def run(spec, ids: list[int], samples: int, n_tokens: int) -> dict | None:
    target, draft_model = run_models()
    what = f"all {spec.settings.k + 1} tokens, pruned" if target.bpe else f"the first {n_tokens} characters"
    bar = st.progress(0.0, text=f"Computing the target's exact distribution over {what}…")
    clock = {}

    def progress(i: int) -> None:
        clock.setdefault("start", time.monotonic())
        if i % max(1, samples // 100) == 0 or i == samples:
            spent = time.monotonic() - clock["start"]
            left = spent / i * (samples - i)
            bar.progress(i / samples, text=f"{i:,} of {samples:,} generations, about {left:.0f} s left")

    try:
        res = run_exactness(target, ids, spec.settings, samples, draft_model, n_tokens=n_tokens, progress=progress)
    except (ValueError, RuntimeError) as e:
        st.error(f"The run could not finish: {md(e)}")
        return None
    finally:
        bar.empty()
    rest = tuple(range(1, n_tokens))
    first = None if res.cells is not None or not rest else chi_square(res.observed.sum(rest), res.expected.sum(rest))
    return {"result": res, "settings": spec.settings, "prompt": spec.prompt, "first": first,
            "reference_tv": charts.reference_tv(res.expected, samples)}  # fmt: skip


SHOW = {"exact": st.success, "biased": st.error, "unknown": st.info}


def _p(test) -> str:
    return "not enough samples" if test.p_value is None else f"p-value {test.p_value:.3g}"


def show(entry: dict, vocab: list[str]) -> None:
    res, s = entry["result"], entry["settings"]
    st.caption(worded(f"{s.drafter} drafter, {s.verification} verification, temperature {s.temperature}, K = "
                      f"{s.k}, {res.samples:,} runs of {res.new_tokens} characters (seeds {s.seed}–"
                      f"{s.seed + res.samples - 1}) after the prompt ending:", vocab))  # fmt: skip
    st.code(entry["prompt"][-60:], language=None)
    kind, sentence = verdict(res, ALPHA)
    SHOW[kind](sentence)
    st.caption(md(worded(rule_sentence(s.verification), vocab)))
    first = entry["first"]
    alone = (
        ""
        if res.cells is not None
        else f" The first character alone: {_p(first) if first is not None else 'as above'}."
    )
    st.caption(worded(f"Every position ({res.new_tokens} of them, probability integral transform): {_p(res.joint)}. "
                      f"{res.enumerated[0].upper()}{res.enumerated[1:]}: {_p(res.first)}.{alone} The verdict's p-value "
                      f"is twice the smaller of the first two (Bonferroni); exact sampling gives p-values spread evenly "
                      f"between 0 and 1, a biased rule p-values near 0 once N is large enough. The level {ALPHA} is "
                      f"fixed in advance.", vocab))  # fmt: skip
    row = st.container(horizontal=True, gap="medium")  # wraps: no label cut to "Chi-square, eve…" at 1024 px
    row.metric("Chi-square, every position", f"{res.joint.statistic:.1f}", help=f"Pearson's, on {res.joint.dof} "
                "degrees of freedom: the sum over positions of the test that the transformed values are uniform.", width="content")  # fmt: skip
    row.metric("p-value", "–" if res.p_value is None else f"{res.p_value:.3g}", help="The chance of statistics "
                "this large if the runs follow the target exactly (both tests, Bonferroni).", width="content")  # fmt: skip
    row.metric("Total variation (TV) distance", f"{res.tv_distance:.4f}", help="½ Σ |observed frequency − exact probability| over "
                "every outcome. Never 0 for finite N: compare with the yardstick beside it.", width="content")  # fmt: skip
    row.metric("TV of exact sampling", f"{entry['reference_tv']:.4f}", help="The TV distance of the same number of "
                "samples drawn straight from the exact distribution (mean of 5 draws): what sampling noise alone gives.", width="content")  # fmt: skip
    chart(charts.position_chart(res), "exact_positions")
    chart(charts.sequence_chart(res, vocab), "exact_sequences", vocab=vocab)
    if res.cells is None:  # a real model's cells are whole sequences: no first-token marginal is kept
        chart(charts.first_char_chart(res, vocab), "exact_first", vocab=vocab)


def render() -> None:
    page_setup()
    st.title("Exactness lab")
    question("Is the output distributed exactly as the target's own, whatever the drafter and the rule?")
    target, _ = run_models()
    vocab = target.tokenizer.pieces
    enumerated = ("the first few characters are also compared with their exact joint distribution, enumerated."
                  if not target.bpe else "the joint distribution of all K + 1 tokens is enumerated with pruning: the "
                  "likeliest sequences are cells of their own, every other one goes to one rest cell, whose mass is "
                  "known exactly. Each run costs a few passes of the model: start with a few hundred.")  # fmt: skip
    st.caption(worded("Speculative decoding promises the target's distribution exactly, whatever the drafter. Run many "
                      "generations of K + 1 characters (so the first round drafts K and every draft position is "
                      "checked) and test what came out against the target's exact distribution at every position; "
                      f"{enumerated} Settings come from the sidebar.", vocab))  # fmt: skip
    valid = valid_spec(target)
    c = st.columns(2, vertical_alignment="bottom")
    c += [st.container(horizontal=True, gap="small")] * 2  # Run and the demo: labels whole at 1024 px
    samples = int(c[0].number_input("Generations N", 100, MAX_SAMPLES, 1_000, step=100, key="ex_samples",
                                    help="More runs detect smaller biases (and take longer)."))  # fmt: skip
    n_tokens = c[1].radio(worded("First characters enumerated", vocab), [2, 3], index=1, horizontal=True,
                          key="ex_tokens", help=worded("The first characters' exact joint distribution, drawn below and "
                          "tested on its own; every position up to K + 1 is tested either way. 2 is faster. (A real "
                          "model: all K + 1 tokens, pruned.)", vocab), disabled=target.bpe)  # fmt: skip
    # The target reads the prompt and the K generated characters before the last in one window: no sliding.
    k_now = valid[0].settings.k if valid is not None else 0
    fits = target.config.block_size - k_now
    if valid is not None and len(valid[1]) > fits:
        st.error(worded(f"The exact distributions are computed in one window of {target.config.block_size} characters: "
                        f"the prompt ({len(valid[1]):,} characters) and the first {k_now} generated ones (K = {k_now}). "
                        f"Keep the prompt's last {fits} characters to test here.", vocab))  # fmt: skip
        tail = target.tokenizer.decode(valid[1][-fits:])  # the text of the prompt's last ``fits`` tokens
        st.button(
            worded(f"Keep the last {fits} characters", vocab), on_click=_keep_last, args=(tail,), key="ex_keep_last"
        )
        valid = None
    clicked = c[2].button("Run", type="primary", icon=":material/play_arrow:", disabled=valid is None, key="ex_run")
    verification = st.session_state.get("ctl_verification", LOSSLESS)
    if verification == LOSSLESS:
        c[3].button(f"Load a biased rule: {BIASED.name}", key="ex_demo", on_click=_set_verification,
                    args=(BIASED.name, True), help=f"verification = {BIASED.name} ({md(BIASED.summary)}) with the "
                    f"{_DEMO_DRAFTER.name} drafter on the “{_DEMO_DRAFTER.preset}” prompt at temperature 1: a setting "
                    "where its bias is large.")  # fmt: skip
    else:
        c[3].button("Back to the lossless rule", key="ex_demo", on_click=_set_verification, args=(LOSSLESS, False))

    results: dict = st.session_state.setdefault("ex_results", {})
    if valid is not None:
        spec, ids = valid
        key = _key(spec, samples, n_tokens)
        if clicked and (entry := run(spec, ids, samples, n_tokens)) is not None:
            results.pop(key, None)
            results[key] = entry
            while len(results) > KEEP:
                results.pop(next(iter(results)))
        if key in results:
            st.session_state.ex_last = key
            show(results[key], target.tokenizer.pieces)
        elif st.session_state.get("ex_last") in results:
            st.info("These results are for other settings (below). Press **Run** to test the current ones.")
            show(results[st.session_state.ex_last], target.tokenizer.pieces)
        else:
            st.info("Press **Run** to sample: first the exact distribution (one batched target pass over every "
                    "prefix), then the generations, with the time left on the progress bar.")  # fmt: skip
    elif st.session_state.get("ex_last") in results:  # a rejected prompt: the last results stay, said to be so
        previous_run_note(st.session_state.get("ctl_prompt", ""), st.session_state.ex_last[1], "The results shown")
        show(results[st.session_state.ex_last], target.tokenizer.pieces)
