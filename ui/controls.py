"""The sidebar every page shares, and the run it defines.

The run's settings live in three places that must agree: the widgets (keys ``ctl_*``), the
last valid ``RunSpec`` (``st.session_state.spec``), and the URL query string, which is written
from the spec on every run so a shared link opens the same run. Widget values are re-seeded
from the spec when Streamlit drops them (it does on a page switch), so every page shows the same
settings.
"""

import streamlit as st

from models.tokenizer import UnknownCharactersError
from specviz.core.engine import Generation
from specviz.core.markup import md
from specviz.core.session import Session
from specviz.core.settings import KNOBS, Knob, Settings, method_knobs
from specviz.drafters import drafter_class, drafter_names
from specviz.llm.choice import ModelChoice
from specviz.llm.presets import LLM_PRESETS, as_chat, chat_template
from specviz.teaching.presets import APP_PRESETS, preset
from specviz.teaching.query import RunSpec, from_query, to_query
from ui.model_choice import (
    active_model,
    fit_drafter,
    model_picker,
    offered_drafters,
    run_costs,
    run_models,
    unit,
    words,
)

FREE_TEXT = "Free text"
CHARACTER_GPT = ModelChoice()  # the default model
CHAT_HELP = ("Send the prompt as one user turn in the tokenizer's chat template (an instruct model's), so the "
             "model answers it; off: the model continues the text as it is.")  # fmt: skip


def help_text(k: Knob) -> str:
    """A knob's hover help: its sentence, and for a choice each option's one line, in the model's words."""
    if k.describe is None:
        return words(k.help)
    return words(k.help + "\n\n" + "\n\n".join(f"- **{md(k.option(o))}**: {md(k.describe(o))}" for o in k.choices()))


def knob_widget(name: str, key: str | None = None, slider: bool = False, choices: tuple | None = None, **kw):
    """The widget a knob declares (Settings' metadata), with its label, range and help; ``key`` defaults
    to the sidebar's ``ctl_<name>``; ``slider``: a number as a slider (the pages' own knob rows);
    ``choices``: a select's options where the model offers fewer than the knob declares."""
    k, key, label = KNOBS[name], key or f"ctl_{name}", KNOBS[name].label
    if k.widget == "select":
        return st.selectbox(label, choices or k.choices(), key=key, help=help_text(k), format_func=k.option, **kw)
    if k.widget == "checkbox":
        return st.checkbox(label, key=key, help=help_text(k), **kw)
    lo, hi = k.app_limits()
    if k.widget == "slider" or slider:
        return st.slider(label, lo, hi, step=k.step, key=key, help=help_text(k), **kw)
    return st.number_input(label, lo, hi, step=k.step or 1, key=key, help=help_text(k), **kw)


def _main_knobs(drafter: str, drafters: tuple[str, ...]) -> None:
    """The run's knobs, in declaration order (a trait's knob only for a drafter that has the trait, a
    rule's only under that rule); two numbers in a row share a line. ``drafters``: those the model runs."""
    cls = drafter_class(drafter)
    rule = st.session_state.get("ctl_verification")
    names = [n for n, k in KNOBS.items() if k.main and (not k.trait or getattr(cls, k.trait))
             and (not k.verification or rule in k.verification)]  # fmt: skip
    i = 0
    while i < len(names):
        pair = names[i : i + 2]
        if len(pair) == 2 and all(KNOBS[n].widget == "number" for n in pair):
            for col, n in zip(st.columns(2), pair, strict=True):
                with col:
                    knob_widget(n)
        else:
            pair = pair[:1]
            knob_widget(pair[0], choices=drafters if pair[0] == "drafter" else None)
        i += len(pair)


def _drafter_knobs() -> None:
    """Every drafter's own knobs, under its name (a knob shared by several drafters: under the first)."""
    shown: set[str] = set()
    for drafter in drafter_names():
        names = [n for n in method_knobs(drafter) if not KNOBS[n].main and n not in shown]
        if names:
            st.caption(drafter)
            for n in names:
                knob_widget(n)
            shown |= set(names)


def _presets() -> tuple:
    """The presets for the active model: Tiny Shakespeare's, or a real model's (specviz/llm/presets.py)."""
    return LLM_PRESETS if active_model().real else APP_PRESETS


def _keep_chat() -> None:
    st.session_state.chat_on = st.session_state.ctl_chat


def chat_on(checkpoint) -> bool:
    """Whether the prompt goes through the model's chat template (the toggle, where the tokenizer has one)."""
    return chat_template(checkpoint.tokenizer) and st.session_state.get("chat_on", False)


def _on_preset() -> None:
    name = st.session_state.ctl_preset
    if name != FREE_TEXT:
        # Any model's presets: the callback may run before this rerun's model switch takes effect
        text = next((p.text for p in (*APP_PRESETS, *LLM_PRESETS) if p.name == name), None)
        if text is not None:
            st.session_state.ctl_prompt = text


def _seed_widgets(spec: RunSpec) -> None:
    """Give every sidebar widget its value before it is drawn: the value it already has, or the
    spec's where Streamlit dropped it (it does on a page switch). Written back on every run, not
    only when missing: a value the script sets travels with the widget to the browser. Under a
    class of 30 (benchmarks/class_size.py) a browser redrew the sidebar's widgets from their bare
    defaults (an empty prompt, drafter 'none', K = 1) and sent those back; now a redrawn widget
    shows, and returns, the run's value."""
    names = [p.name for p in _presets()]
    values = {f"ctl_{name}": value for name, value in vars(spec.settings).items()}
    values |= {"ctl_prompt": spec.prompt, "ctl_preset": spec.preset if spec.preset in names else FREE_TEXT}
    for key, value in values.items():
        st.session_state[key] = st.session_state.get(key, value)


def sidebar() -> RunSpec:
    """Render the shared controls; returns the run they describe (not yet validated)."""
    if "spec" not in st.session_state:  # a new browser session: start from the link
        spec, problems = from_query(st.query_params.to_dict())
        st.session_state.spec, st.session_state.query_problems = spec, problems
    with st.sidebar:
        for problem in st.session_state.pop("query_problems", []):
            st.warning(f"Link: {md(problem)}")
        before = active_model()
        model = model_picker()
        checkpoint, _ = run_models(model)
        if model != before and model.real != before.real:  # the other kind of model: its own presets
            st.session_state.ctl_preset = FREE_TEXT
        _seed_widgets(st.session_state.spec)
        fit_drafter(checkpoint)
        presets = _presets()
        st.selectbox("Prompt", [FREE_TEXT] + [p.name for p in presets], key="ctl_preset", on_change=_on_preset,
                     help="Presets that show different behaviour; edit the text freely.")  # fmt: skip
        st.text_area("Prompt text", key="ctl_prompt", height=110, label_visibility="collapsed")
        if chat_template(checkpoint.tokenizer):  # kept in chat_on: Streamlit drops a widget's value on a page switch
            st.session_state.ctl_chat = st.session_state.get("chat_on", False)
            st.toggle("Chat", key="ctl_chat", help=CHAT_HELP, on_change=_keep_chat)
        _main_knobs(st.session_state.ctl_drafter, offered_drafters(checkpoint))
        with st.expander("Drafter knobs"):
            _drafter_knobs()
    settings = Settings(**{name: st.session_state[f"ctl_{name}"] for name in vars(Settings())})
    text = st.session_state.ctl_prompt
    chosen = st.session_state.ctl_preset
    if model.real:  # a real model's presets are not a link's (query.py knows Tiny Shakespeare's): sent as text
        return RunSpec(settings, text, None)
    return RunSpec(settings, text, chosen if chosen != FREE_TEXT and preset(chosen).text == text else None)


def _drop_characters(bad: list[str]) -> None:
    st.session_state.ctl_prompt = "".join(c for c in st.session_state.ctl_prompt if c not in bad)
    st.session_state.ctl_preset = FREE_TEXT


def _run_key(spec: RunSpec, chat: bool = False) -> tuple:
    return spec.settings, spec.prompt, active_model(), chat


def checked_prompt(spec: RunSpec, tokenizer, chat: bool = False) -> list[int] | None:
    """The prompt's ids when the spec is valid (``chat``: as a user turn in the tokenizer's chat template);
    otherwise None, after saying what is wrong."""
    try:
        spec.settings.check()
        if not spec.prompt:
            raise ValueError("The prompt is empty: type a few characters, or pick a preset.")
        ids = tokenizer.encode(as_chat(tokenizer, spec.prompt) if chat else spec.prompt)
        if not ids:
            raise ValueError("The prompt encodes to no tokens: type some text, or pick a preset.")
        return ids
    except UnknownCharactersError as e:
        st.error(f"The prompt has {md(e)}. The model only knows Tiny Shakespeare's 65 characters.")
        st.button("Drop them from the prompt", on_click=_drop_characters, args=(e.chars,), key="drop_chars")
    except ValueError as e:
        st.error(md(e))
    return None


def character_only(page: str | None, top=None) -> None:
    """A page that runs on the character GPT only (``page``: its name; None: any model) says so in one
    sentence and stops, where the sidebar's model is a real one. ``top``: the container under the page's title
    that the sentence goes in, above the page's own words (which are then the character model's)."""
    if page is not None and active_model().real:
        (top or st).info(f"{page} runs on the character GPT only, not yet on a real model: pick the character GPT under "
                "Model in the sidebar to use it.")  # fmt: skip
        st.stop()


def valid_spec(target=None, page: str | None = None, top=None) -> tuple[RunSpec, list[int]] | None:
    """For pages that compute their own runs from the sidebar (no Session): the sidebar's spec
    and prompt ids when valid, which then become the app's run (so other pages show the same
    settings); otherwise None, after a message. ``target``: the checkpoint the page runs (default: the
    sidebar's model's); ``page``, ``top``: the page's name where it runs on the character GPT only, and where
    it says so (character_only)."""
    spec = sidebar()
    character_only(page, top)
    target = target or run_models()[0]
    ids = checked_prompt(spec, target.tokenizer, chat_on(target))
    if ids is not None:
        st.session_state.spec = spec
    st.query_params.from_dict(to_query(st.session_state.spec))
    return None if ids is None else (spec, ids)


@st.cache_resource(max_entries=64, show_spinner=False)
def shared_generation(settings: Settings, ids: tuple[int, ...], model: ModelChoice = CHARACTER_GPT) -> Generation:
    """One generation per settings and prompt for every browser session of this server: a class
    following one preset computes each round once, and each student keeps a cursor of their own
    (Session). Not st.cache_data: that hands each caller a copy, so a run that grows as anyone
    steps would be computed again per student. Shared, never mutated outside its lock; the
    settings (drafter, knobs, seed, ...), the prompt and the model are the key; the models are loaded once
    per server (ui/model_choice.py)."""
    target, draft_model = run_models(model)
    return Generation(target, list(ids), settings, draft_model, costs=run_costs(settings, model))


def previous_run_note(box: str, prompt: str | None = None, what: str = "The run shown") -> None:
    """Under a rejected spec the previous run (or result) stays on screen: say in words which prompt it
    uses, so no one reads it as the run of ``box``, the text in the prompt box. ``prompt``: the one it used
    (default: the active session's)."""
    if prompt is None:
        shown = st.session_state.get("run_key")
        if shown is None:
            return
        prompt = shown[1]
    if prompt != box:
        st.warning(f"{what} uses the previous prompt, “{md(prompt, 40)}” ({len(prompt):,} characters), not "
                   "the text in the box.")  # fmt: skip
    else:
        st.warning(f"{what} uses the previous settings, not the ones in the sidebar.")


def active_session(page: str | None = None, top=None) -> Session | None:
    """The sidebar's run, restarted from the prompt whenever a setting changes (its rounds are
    shared with every session on the same settings and prompt: shared_generation).

    Bad input gets a message in the page and the previous run stays on screen: only a spec
    that made a Session replaces the one shown. ``page``: the page's name where it runs on the character
    GPT only, ``top`` where it says so (character_only)."""
    spec = sidebar()
    character_only(page, top)
    model = active_model()
    target, draft_model = run_models(model)
    chat = chat_on(target)
    ids = checked_prompt(spec, target.tokenizer, chat)
    if ids is None:
        previous_run_note(spec.prompt)
    if ids is not None:
        key = _run_key(spec, chat)
        if st.session_state.get("run_key") != key:
            try:
                generation = shared_generation(spec.settings, tuple(ids), model)
                session = Session(target, ids, spec.settings, draft_model, generation)
            except (ValueError, RuntimeError) as e:
                st.error(f"The run could not start: {md(e)}")
            else:
                st.session_state.run, st.session_state.run_key, st.session_state.spec = session, key, spec
                st.session_state.scrub = 0
        B, u = target.config.block_size, unit(target)
        if len(ids) > B:
            st.info(f"The prompt has {len(ids):,} {u}s and the model sees at most {B} at a time: the target "
                    f"reads the last {B // 2}–{B} {u}s (the window moves half a block at a time, and the cache "
                    f"is re-prefilled when it does). Drafters that read the prompt still use all of it.")  # fmt: skip
    st.query_params.from_dict(to_query(st.session_state.spec))
    return st.session_state.get("run")
