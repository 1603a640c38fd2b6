"""Landing page: what the app is, the two models, and a sample from the target."""

import streamlit as st

from models.tokenizer import UnknownCharactersError
from pages.common import models_or_stop, page_setup
from specviz.engine import Generation, Settings
from specviz.markup import md


def render() -> None:
    page_setup()
    st.title("specviz")
    st.markdown(
        "Speculative decoding, step by step, on a real character-level GPT trained on Tiny Shakespeare: "
        "a cheap drafter guesses K characters, the target model checks them all in one forward pass, "
        "and an accept/reject rule keeps the output distribution exactly the target's."
    )
    target, tiny = models_or_stop()
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
                settings = Settings(drafter="none", temperature=temperature, max_new_tokens=int(length), seed=int(seed))
                st.session_state.home_sample = prompt + Generation(target, ids, settings).run().text
            except UnknownCharactersError as e:
                st.error(f"The prompt has {md(e)}.")
            except ValueError as e:
                st.error(md(e))
    if "home_sample" in st.session_state:
        st.text(st.session_state.home_sample)  # st.text renders no markup: the text shows as typed


render()
