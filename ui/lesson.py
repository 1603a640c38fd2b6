"""Guided lesson: one real round of speculative decoding in short steps, each drawing only the part
of the charts it talks about. In "predict, then reveal" mode the student guesses each check's
verdict before seeing it. The steps' texts live in specviz.teaching.lesson; this file lays them out."""

import streamlit as st

from specviz import charts
from specviz.adaptive.costs import cpu_name
from specviz.charts import lesson as lesson_charts
from specviz.charts.verdict import CANDIDATE_HELP, CANDIDATE_VIEW
from specviz.core.engine import Generation
from specviz.core.markup import md
from specviz.core.record import worded
from specviz.core.settings import Settings
from specviz.llm.choice import ModelChoice
from specviz.llm.presets import LLM_PRESETS
from specviz.teaching import lesson
from specviz.teaching.agreement import bench_figure, sentence, timing_figure
from specviz.teaching.presets import preset
from specviz.teaching.stats import acceptance_by_position
from specviz.teaching.text_view import text_html
from ui.common import page_setup, question, stored_bench
from ui.controls import CHARACTER_GPT, valid_spec
from ui.model_choice import active_model, run_costs, run_models, words
from ui.widgets import chart, table

SOURCES = ("The lesson's example", "The sidebar's run")


@st.cache_data(max_entries=16, show_spinner="Running the lesson's rounds, and timing them against plain decoding…")
def lesson_trace(settings: Settings, ids: tuple, model: ModelChoice = CHARACTER_GPT):
    """A run's first rounds (a Trace), until they show every case, and their measured speedup;
    once per settings, prompt and model."""
    target, draft_model = run_models(model)
    costs = run_costs(settings, model)
    gen = Generation(target, list(ids), settings, draft_model, costs=costs)
    while len(gen.trace.rounds) < lesson.MAX_ROUNDS and not gen.done and not lesson.enough(gen.trace.rounds):
        gen.step()
    return gen.trace, lesson.measure_speedup(target, draft_model, list(ids), settings, len(gen.trace.rounds),
                                             costs=costs)  # fmt: skip


def _move(delta: int | None) -> None:
    st.session_state.lesson_step = 0 if delta is None else st.session_state.lesson_step + delta


def _reveal(i: int, accepted: bool) -> None:
    guess = st.session_state.get(f"lesson_guess_{i}")
    if guess is None:
        st.session_state.lesson_choose_first = True
    else:
        st.session_state.lesson_answers[i] = {"guess": guess, "correct": (guess == "accepted") == accepted}


def navigation(n: int, predict: bool, locked: bool) -> int:
    """Previous, Next, Start over and where we are. Predicting, ``locked`` holds Next until the guess on
    screen is revealed, and the step count is not shown: how many checks follow would give the answer."""
    i = st.session_state.lesson_step
    # Buttons as wide as their labels, in a row that wraps: nothing is cut to "N.." at 1024 px.
    row = st.container(horizontal=True, gap="small", vertical_alignment="center")
    row.button(
        "Previous", icon=":material/chevron_left:", on_click=_move, args=(-1,), disabled=i == 0, key="lesson_prev"
    )
    row.button("Next", icon=":material/chevron_right:", on_click=_move, args=(1,), disabled=i == n - 1 or locked,
               type="primary", key="lesson_next", help="Reveal your prediction first." if locked else None)  # fmt: skip
    row.button("Start over", icon=":material/first_page:", on_click=_move, args=(None,), key="lesson_restart")
    if predict:
        row.markdown(f"Step {i + 1}")
    else:
        row.progress((i + 1) / n, text=f"Step {i + 1} of {n}")
    return i


def check(step: lesson.Step, pos, vocab: list[str], predict: bool, i: int) -> None:
    answer = st.session_state.lesson_answers.get(i)
    if predict and answer is None:
        chart(lesson_charts.question_bars(pos, vocab), f"lesson_question_{i}", vocab=vocab)
        st.radio("Your prediction: will this draft be accepted?", ["accepted", "rejected"], index=None,
                 horizontal=True, key=f"lesson_guess_{i}")  # fmt: skip
        st.button("Reveal", on_click=_reveal, args=(i, pos.accepted), key=f"lesson_reveal_{i}")
        if st.session_state.pop("lesson_choose_first", False):
            st.warning("Pick a prediction first, then reveal.")
        return
    if answer is not None:
        (st.success if answer["correct"] else st.warning)(
            f"You predicted **{answer['guess']}**: " + ("right." if answer["correct"] else "not this time.")
        )
    st.markdown(step.outcome)
    chart(charts.pq_bars(pos, vocab), f"lesson_pq_{i}", vocab=vocab)


def glossary_table(rounds, settings: Settings, counts: bool, timing: dict | None):
    columns = ["metric", "formula", "counts", "value"] if counts else ["metric", "formula", "definition"]
    rows = lesson.glossary(rounds, settings.k, timing)
    st.table([{c: words(str(row[c])) for c in columns} for row in rows])  # wraps long counts
    s = settings  # the lesson's speedup against the atlas's stored run of the same configuration, where it has one
    stored = bench_figure(stored_bench(), s.drafter, s.temperature, s.k, s.k_auto, "the atlas's stored run")
    if timing and stored is not None:
        st.caption(
            words(md(sentence(timing_figure(timing, cpu_name(), f"the lesson's first {len(rounds)} rounds"), stored)))
        )


def draw(step: lesson.Step, trace, timing: dict, settings: Settings, predict: bool, i: int) -> None:
    vocab, r = trace.vocab, trace.rounds[step.round]
    for part in step.parts:
        if part == "text_before":
            st.html(text_html(trace, r.index))
        elif part == "draft":
            table(lesson_charts.draft_frame(r, vocab), vocab=vocab)
        elif part == "verify":
            table(
                lesson_charts.verify_frame(r, trace.root(r), vocab),
                lesson_charts.VERIFY_HELP,
                lesson_charts.VERIFY_VIEW,
                vocab=vocab,
            )
        elif part == "check":
            check(step, r.positions[step.position], vocab, predict, i)
        elif part == "last":
            chart(
                charts.residual_bars(r, vocab) if r.correction is not None else charts.bonus_bars(r, vocab),
                "lesson_last",
                vocab=vocab,
            )
        elif part == "kv":
            chart(charts.kv_ledger(r), "lesson_kv")
        elif part == "text_after":
            st.html(text_html(trace, r.index + 1))
            table(charts.candidate_frame(r, vocab), CANDIDATE_HELP, CANDIDATE_VIEW, vocab=vocab)
        elif part == "bonus_round":
            table(charts.candidate_frame(r, vocab), CANDIDATE_HELP, CANDIDATE_VIEW, vocab=vocab)
            chart(charts.bonus_bars(r, vocab), "lesson_bonus", vocab=vocab)
        elif part == "totals":
            glossary_table(trace.rounds, settings, counts=True, timing=timing)
            chart(charts.acceptance_chart(acceptance_by_position(trace.rounds)), "lesson_acceptance")


def render() -> None:
    page_setup()
    st.title("Guided lesson: one round, step by step")
    question("What happens in one round of speculative decoding, one step at a time?")
    valid = valid_spec()  # the sidebar's model (ui/model_choice.py)
    model = active_model()
    target = run_models(model)[0]
    c = st.columns([3, 2])
    source = c[0].radio("Lesson run", SOURCES, horizontal=True, key="lesson_source",
                        help="The example is a run chosen because its rounds show every case. The sidebar's run "
                        "follows your settings.")  # fmt: skip
    predict = c[1].toggle("Predict, then reveal", key="lesson_predict",
                          help="Guess whether each draft will be accepted before the lesson shows it.")  # fmt: skip
    if source == SOURCES[0]:  # on a real model: its quotation preset, which prompt lookup and n-grams draft
        text = LLM_PRESETS[1].text if model.real else preset(lesson.EXAMPLE_PRESET).text
        settings, ids = lesson.EXAMPLE, target.tokenizer.encode(text)
    elif valid is None:
        st.info("The sidebar's settings need fixing first (see the message above), or use the lesson's example.")
        st.stop()
    else:
        settings, ids = valid[0].settings, valid[1]
    try:
        trace, timing = lesson_trace(settings, tuple(ids), model)
    except (ValueError, RuntimeError) as e:
        st.error(f"The run could not go on: {md(e)}")
        st.stop()
    steps = lesson.steps(trace.rounds, trace.vocab, settings, timing)
    if not steps:
        st.warning("In its first rounds this run drafted nothing (the 'none' drafter?), so there is no round to explain. "
                   "Pick a drafter in the sidebar, or use the lesson's example.")  # fmt: skip
        st.stop()
    key = (settings, tuple(ids), model)
    if st.session_state.get("lesson_key") != key:  # a new run: start at the top, forget the guesses
        st.session_state.lesson_key, st.session_state.lesson_step, st.session_state.lesson_answers = key, 0, {}
    st.session_state.lesson_step = min(st.session_state.lesson_step, len(steps) - 1)
    if predict and (answers := st.session_state.lesson_answers):
        st.caption(f"Score: {sum(a['correct'] for a in answers.values())} of {len(answers)} predictions right.")
    i = st.session_state.lesson_step
    step = steps[i]
    locked = predict and "check" in step.parts and i not in st.session_state.lesson_answers
    navigation(len(steps), predict, locked)
    st.subheader(worded(step.title, trace.vocab))
    st.markdown(worded(step.text, trace.vocab))
    draw(step, trace, timing, settings, predict, i)
    with st.expander("Glossary: every metric the app shows", expanded=False):
        glossary_table(trace.rounds, settings, counts=False, timing=timing)
        for entry in lesson.drafter_glossary():
            st.markdown(f"**{entry['drafter']}** ({md(entry['paper'])}). {md(words(entry['text']))}")
