"""Placeholder while the page is built (issue 5)."""

import streamlit as st

from pages.common import page_setup

page_setup()
st.title("Coming soon")
