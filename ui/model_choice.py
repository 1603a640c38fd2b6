"""The model a browser session decodes with (specviz/llm/choice.py): its sidebar widgets, the check made
before anything loads, and the models themselves, loaded when first picked and shared by every session.

The choice in effect is ``st.session_state.model`` (per user). A new choice replaces it only once it is
checked from its files and loaded; a bad one gets one line under the widgets, and the run on screen stays.
The character model's path imports nothing of transformers (specviz.llm.load is imported on a real choice).
"""

import streamlit as st

from specviz.adaptive.costs import REFERENCE, CostCurve
from specviz.core.markup import md
from specviz.core.record import worded
from specviz.core.settings import Settings
from specviz.drafters import BASELINE, drafter_class, drafter_names
from specviz.llm.choice import DTYPE_HELP, DTYPES, FOLDER, KIND_HELP, KINDS, ModelChoice, problem
from ui.common import costs_for, models_or_stop

KEYS = {"kind": "ctl_model_kind", "path": "ctl_model_path", "dtype": "ctl_model_dtype"}


def active_model() -> ModelChoice:
    """The model this browser session's runs use (the character GPT until another one loads)."""
    return st.session_state.get("model", ModelChoice())


@st.cache_resource(max_entries=4, show_spinner=False)
def real_checkpoint(choice: ModelChoice):
    """A real model and its tokenizer (LLMCheckpoint), loaded once per server and shared: never mutated
    (each run makes its own cache with target_model())."""
    from specviz.llm import load

    return load.load_model(choice.name, load.DTYPES[choice.dtype])


def run_models(choice: ModelChoice | None = None):
    """(checkpoint, draft model) for a run on ``choice`` (default: the active one): the character target
    and the tiny GPT, or a real model with no draft model (the app offers no draft-model folder)."""
    choice = choice or active_model()
    if choice.real:
        return real_checkpoint(choice), None
    target, tiny = models_or_stop()
    return target, tiny.model


def run_costs(settings: Settings, choice: ModelChoice) -> CostCurve:
    """Adaptive K's cost curve: this machine's for the character model, the reference's for a real model
    (as the command line: measured on the character model only, so far)."""
    return REFERENCE if choice.real else costs_for(settings)


def is_bpe(checkpoint) -> bool:
    """Whether the model's tokens are word pieces (its tokenizer's, not its name's): "token", not "character"."""
    return bool(getattr(checkpoint, "bpe", False))


def unit(checkpoint) -> str:
    """What one token is called on screen for this model."""
    return "token" if is_bpe(checkpoint) else "character"


def words(text: str, checkpoint=None) -> str:
    """Our own sentence about "characters" as it reads for ``checkpoint`` (default: the sidebar's model): "tokens"
    on a BPE model, unchanged on the character GPT. The one place the app's wording follows the model."""
    return worded(text, (checkpoint or run_models()[0]).tokenizer.pieces)


def character_content(sentence: str) -> None:
    """Where a real model is picked, a page whose content is the character GPT's says so in one ``sentence`` at
    its top: what follows is that model's, in its words."""
    if active_model().real:
        st.info(sentence)


def offered_drafters(checkpoint) -> tuple[str, ...]:
    """The drafters the sidebar offers for this model: on word pieces, those with the ``bpe`` trait that need no
    draft model besides the target (the app has no draft-model picker)."""
    if not is_bpe(checkpoint):
        return drafter_names()
    return tuple(n for n in drafter_names(bpe=True) if "draft_model" not in drafter_class(n).needs)


def fit_drafter(checkpoint) -> None:
    """Put the sidebar's drafter on one this model runs, before the widget is drawn: the default where the
    model runs it, else plain decoding."""
    offered = offered_drafters(checkpoint)
    if st.session_state.get("ctl_drafter") not in offered:
        st.session_state.ctl_drafter = Settings().drafter if Settings().drafter in offered else BASELINE


def _load(choice: ModelChoice) -> str | None:
    """Check ``choice`` from its files, then load it (a spinner while it does). -> one line on failure."""
    if (why := problem(choice)) is not None:
        return why
    from specviz.llm.load import LLMError

    try:
        with st.spinner(f"Loading {md(choice.label(), 60)} (about 20 s for SmolLM2 the first time; then shared)..."):
            real_checkpoint(choice)
    except LLMError as e:
        return str(e)
    return None


def _keep(name: str) -> None:
    st.session_state.model_widgets[name] = st.session_state[KEYS[name]]


def model_picker() -> ModelChoice:
    """The sidebar's model widgets; a new, valid choice is loaded and becomes the active model. -> the active one."""
    active = active_model()
    # The widgets' values are kept in "model_widgets", written by their callbacks, and every widget is seeded
    # from it on every run: Streamlit drops (or resets) a widget's value on a page without it.
    kept = st.session_state.setdefault("model_widgets", {name: getattr(active, name) for name in KEYS})
    for name, key in KEYS.items():
        st.session_state[key] = kept[name]
    st.selectbox("Model", tuple(KINDS), key=KEYS["kind"], format_func=KINDS.get, help=KIND_HELP, on_change=_keep,
                 args=("kind",))  # fmt: skip
    kind = kept["kind"]
    if kind == FOLDER:
        st.text_input("Model folder", key=KEYS["path"], placeholder="/path/to/model or model.gguf", on_change=_keep,
                      args=("path",), help="A local transformers causal-LM folder or .gguf file; nothing is downloaded.")  # fmt: skip
    if kind != ModelChoice().kind:
        st.selectbox("Dtype", DTYPES, key=KEYS["dtype"], help=DTYPE_HELP, on_change=_keep, args=("dtype",))
    wanted = ModelChoice(kind, kept["path"] if kind == FOLDER else "",
                         kept["dtype"] if kind != ModelChoice().kind else ModelChoice().dtype)  # fmt: skip
    if wanted != active:
        if (why := _load(wanted)) is None:
            st.session_state.model = active = wanted
        else:
            st.error(f"{md(' '.join(why.split()).rstrip('.'), 300)}. The model stays {md(active.label(), 80)}.")
    st.session_state.model = active
    return active
