"""Landing page: the race (plain against speculative decoding, replayed at measured times), what
speculative decoding is, where to start, the two models, and a sample from the target.

The race is timed on this machine (a few seconds), so the page is drawn before it: its place says
that it is being timed until the script's last step times it and puts the lanes there. A race this
server has timed already is drawn in its place at once."""

import threading
from collections import OrderedDict

import streamlit as st

from models.tokenizer import UnknownCharactersError
from specviz.adaptive.costs import cpu_name, kept
from specviz.adaptive.policy import AUTO_K_MAX
from specviz.core.engine import Generation
from specviz.core.markup import md
from specviz.core.settings import Settings
from specviz.drafters import BASELINE, drafter_names
from specviz.kernels import native
from specviz.teaching.agreement import bench_figure, race_figure, sentence
from specviz.teaching.race import race, race_html, spread_sentence
from ui.common import costs_for, kept_costs, models_or_stop, page_setup, stored_bench
from ui.model_choice import character_content

RACE_PROMPT = "ROMEO:\nBut soft, what light through yonder window breaks?\n"
TIMING_NOTE = ("Timing the race on this machine: plain and speculative decoding, 3 runs of each, interleaved. "
               "The lanes appear here when they are measured.")  # fmt: skip
FIRST_START_NOTE = ("Getting this machine ready, once per CPU and version of the code (a few seconds): building the "
                    "lean pass's kernels and measuring what a verify pass costs. Then the race is timed here.")  # fmt: skip
RACE_CAPTION = ("Each lane replays a real run at the times the engine measured on this server (the median of 3 "
                "interleaved runs), slowed down so the eye can follow; the figures under each lane are the measured ones.")  # fmt: skip


class Races:
    """The races this server has timed, by (settings, "Measure again" count), shared by every session (a
    class opening Home times each once): the 64 last used. One race is timed at a time: two timed at
    once on a small machine would slow each other down, and the figures with them."""

    SIZE = 64

    def __init__(self):
        self.lanes: OrderedDict = OrderedDict()
        self.lock = threading.Lock()  # the table's; held for moments
        self.timing = threading.Lock()  # held while a race is timed

    def get(self, key):
        """(plain, speculative) lanes timed already, or None."""
        with self.lock:
            if key in self.lanes:
                self.lanes.move_to_end(key)
            return self.lanes.get(key)

    def time(self, key, target, tiny):
        """The lanes for ``key``, timed now unless another session has just timed them."""
        with self.timing:
            if (lanes := self.get(key)) is not None:
                return lanes
            settings, _ = key
            lanes = race(target, target.tokenizer.encode(RACE_PROMPT), settings, tiny.model, costs=costs_for(settings))
            with self.lock:
                self.lanes[key] = lanes
                while len(self.lanes) > self.SIZE:
                    self.lanes.popitem(last=False)
            return lanes


@st.cache_resource(show_spinner=False)
def races() -> Races:
    return Races()


def race_controls() -> tuple[Settings, int]:
    """The race's heading and controls: (its settings, the "Measure again" count)."""
    st.subheader("The race: plain against speculative decoding")
    c1, c2, c3 = st.columns([2, 1, 1])
    names = drafter_names(drafts=True)
    drafter = c1.selectbox("Drafter", names, index=names.index(drafter_names(featured=True)[0]),
                           key="race_drafter", help="K is chosen each round (adaptive K, at most 12).")  # fmt: skip
    temperature = c2.select_slider("Temperature", [0.0, 0.5, 0.8, 1.0], 0.0, key="race_temperature",
                                   help="0 = greedy: both lanes write the same characters.")  # fmt: skip
    if c3.button("Measure again", help="Run both again on this machine, now."):
        st.session_state.race_nonce = st.session_state.get("race_nonce", 0) + 1
    settings = Settings(drafter=drafter, k=AUTO_K_MAX, k_auto=True, temperature=temperature, max_new_tokens=200)
    return settings, st.session_state.get("race_nonce", 0)


def against_atlas(settings: Settings, plain, spec) -> str:
    """The race against the atlas's stored run of the same configuration (drafter, temperature, adaptive K):
    whether they agree within the spreads both state, and if not, why not ('' where the run has no such row)."""
    text = f"the race's prompt × {settings.max_new_tokens} characters"
    stored = bench_figure(stored_bench(), settings.drafter, settings.temperature, settings.k, settings.k_auto,
                          "the atlas's stored run")  # fmt: skip
    here = race_figure(plain, spec, cpu_name(), text)
    return "" if stored is None or here is None else sentence(here, stored)


def draw_race(slot, settings: Settings, plain, spec) -> None:
    with slot.container():
        # Trusted HTML: built by specviz.teaching.race, with every character of text set through textContent.
        st.iframe(race_html(RACE_PROMPT, plain, spec), height=360)
        st.caption(f"{RACE_CAPTION} {spread_sentence(plain, spec)} {md(against_atlas(settings, plain, spec))}")


def start_here() -> None:
    st.subheader("Start here")
    st.markdown(
        "1. **Guided lesson**: one real round in eleven short steps.\n"
        "2. **Step through**: round after round, every number on screen.\n"
        "3. **Acceptance math**: why accept a draft with min(1, p/q), where p is the target's probability and q "
        "is the drafter's probability, and draw from the residual.\n"
        "4. **Trie and tree attention**: drafting a tree and checking it in one pass.\n"
        "5. **NASD storage**: a drafter that learns from the text as it goes.\n"
        "6. **Drafter shoot-out**: every drafter timed against plain decoding.\n"
        "7. **Exactness lab**: thousands of runs tested against the model's exact distribution."
    )


def models_table(target, tiny) -> None:
    st.subheader("The models")
    st.table(
        [
            {
                "model": name,
                "parameters": f"{ck.model.num_params():,}",
                "layers x width": f"{ck.config.n_layer} x {ck.config.n_embd}",
                "context": ck.config.block_size,
                "val loss": f"{ck.meta['val_loss']:.3f}",
                "role": role,
            }
            for name, ck, role in [("target", target, "the model being decoded"), ("tiny", tiny, "neural draft model")]
        ]
    )


def sample_section(target) -> None:
    st.subheader("A sample from the target")
    with st.form("sample_form"):
        prompt = st.text_area("Prompt", "ROMEO:\n", help="Characters from Tiny Shakespeare's vocabulary.")
        c1, c2, c3 = st.columns(3)
        temperature = c1.slider("Temperature", 0.0, 2.0, 0.8, 0.05, help="0 = greedy")
        length = c2.number_input("New characters", 1, 1000, 300)
        seed = c3.number_input("Seed", 0, 2**31 - 1, 0)
        submitted = st.form_submit_button("Generate")
    if submitted:
        if not prompt:
            st.warning("The prompt is empty: type a few characters to continue.")
        else:
            try:
                ids = target.tokenizer.encode(prompt)
                settings = Settings(
                    drafter=BASELINE, temperature=temperature, max_new_tokens=int(length), seed=int(seed)
                )
                st.session_state.home_sample = prompt + Generation(target, ids, settings).run().text
            except UnknownCharactersError as e:
                st.error(f"The prompt has {md(e)}.")
            except ValueError as e:
                st.error(md(e))
    if "home_sample" in st.session_state:
        st.text(st.session_state.home_sample)  # st.text renders no markup: the text shows as typed


def render() -> None:
    page_setup(kernels=False)  # built or loaded once the page is drawn (below)
    st.title("specviz")
    character_content("The race and the sample on this page run on the character GPT, the model they are timed and "
                      "drawn on; the model picked in the sidebar runs in Step through, the lesson, the tree page and "
                      "the Exactness lab.")  # fmt: skip
    st.markdown(
        "A language model writes one character per forward pass, and each pass costs about the same whether it "
        "reads one position or five. **Speculative decoding** lets a cheap drafter guess the next K characters and "
        "has the model check all of them in one pass. An accept/reject rule keeps exactly the characters the model "
        "itself would have written, so the output is unchanged, only sooner."
    )
    target, tiny = models_or_stop()
    race_settings, nonce = race_controls()
    slot = st.empty()
    key = (race_settings, nonce)
    if (lanes := races().get(key)) is not None:  # timed already in this server: the lanes at once
        draw_race(slot, race_settings, *lanes)
    else:  # timed last, after the page is drawn; meanwhile its place says so
        waiting = slot.container()
        note = waiting.empty()
        note.info(TIMING_NOTE)
        waiting.empty()  # in the caption's place: a caption left from the last lanes would stay on screen, greyed
    start_here()
    models_table(target, tiny)
    sample_section(target)
    native.prepare_in_background()  # drawn: now the kernels, which the race's passes use
    if lanes is None:
        # A machine's first start (or new code for a pass): the kernels built (begun just above) and
        # the cost curve measured, here where the note says so, not under a spinner of their own.
        if not native.ready() or kept(target) is None:
            note.info(FIRST_START_NOTE)
        kept_costs()
        note.info(TIMING_NOTE)
        lanes = races().time(key, target, tiny)
        draw_race(slot, race_settings, *lanes)
