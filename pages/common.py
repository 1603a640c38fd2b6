"""What every page shares: the checkpoints, loaded once per server process and never mutated."""

import streamlit as st

from models.checkpoint import CheckpointError, load_checkpoint


@st.cache_resource(show_spinner="Loading the models...")
def load_models():
    """(target, tiny) checkpoints. Shared by every session: read-only."""
    return load_checkpoint("target"), load_checkpoint("tiny")


def models_or_stop():
    try:
        return load_models()
    except CheckpointError as e:
        st.error(f"The models could not be loaded: {e}")
        st.stop()
