"""Landing page: the race (plain against speculative decoding, replayed at measured times), what
speculative decoding is, where to start, the two models, and a sample from the target."""

import streamlit as st

from models.tokenizer import UnknownCharactersError
from specviz.adaptive.policy import AUTO_K_MAX
from specviz.core.engine import Generation
from specviz.core.markup import md
from specviz.core.settings import Settings
from specviz.drafters import BASELINE, drafter_names
from specviz.teaching.race import race, race_html
from ui.common import costs_for, models_or_stop, page_setup

RACE_PROMPT = "ROMEO:\nBut soft, what light through yonder window breaks?\n"


@st.cache_data(show_spinner=False, max_entries=64)
def measured_race(settings: Settings, nonce: int, _target, _tiny):
    """Shared by every session (a class opening Home measures once); "Measure again" bumps the nonce."""
    return race(_target, _target.tokenizer.encode(RACE_PROMPT), settings, _tiny.model, costs=costs_for(settings))


def race_section(target, tiny) -> None:
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
    with st.spinner("Timing both runs (3 each, interleaved)..."):
        plain, spec = measured_race(settings, st.session_state.get("race_nonce", 0), target, tiny)
    # Trusted HTML: built by specviz.teaching.race, with every character of text set through textContent.
    st.iframe(race_html(RACE_PROMPT, plain, spec), height=360)
    st.caption("Each lane replays a real run at the times the engine measured on this server (the median of 3 "
               "interleaved runs), slowed down so the eye can follow; the figures under each lane are the measured ones.")  # fmt: skip


def render() -> None:
    page_setup()
    st.title("specviz")
    st.markdown(
        "A language model writes one character per forward pass, and each pass costs about the same whether it "
        "reads one position or five. **Speculative decoding** lets a cheap drafter guess the next K characters and "
        "has the model check all of them in one pass. An accept/reject rule keeps exactly the characters the model "
        "itself would have written, so the output is unchanged, only sooner."
    )
    target, tiny = models_or_stop()
    race_section(target, tiny)
    st.subheader("Start here")
    st.markdown(
        "1. **Guided lesson**: one real round in eleven short steps.\n"
        "2. **Step through**: round after round, every number on screen.\n"
        "3. **Acceptance math**: why accept with min(1, p/q) and draw from the residual.\n"
        "4. **Trie and tree attention**: drafting a tree and checking it in one pass.\n"
        "5. **NASD storage**: a drafter that learns from the text as it goes.\n"
        "6. **Drafter shoot-out**: every drafter timed against plain decoding.\n"
        "7. **Exactness lab**: thousands of runs tested against the model's exact distribution."
    )
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
