"""What every page shares: the page setup and the checkpoints, loaded once per server process
and never mutated."""

from pathlib import Path

import streamlit as st
from streamlit import config
from streamlit.runtime.pages_manager import PagesManager

from models.checkpoint import CheckpointError, load_checkpoint
from specviz.adaptive.costs import REFERENCE, CostCurve, cpu_name, kept_curve, measure
from specviz.bench.rows import rows_from_jsonl
from specviz.core.markup import md
from specviz.core.settings import Settings
from specviz.kernels import native

FAVICON = str(Path(__file__).resolve().parents[1] / "assets" / "favicon.png")
BENCH = Path(__file__).resolve().parents[1] / "docs" / "bench.jsonl"  # the stored bench run the atlas shows


def page_setup(kernels: bool = True) -> None:
    """Call first in every page. ``kernels``: start loading (or, on a machine's first start, building) the
    kernels now, in the background; Home and Step through pass False and call ``native.prepare_in_background``
    once they are drawn, so that a first start's compilers do not take the CPU the first page draws with.

    Streamlit treats a folder named pages/ beside the entry script as its legacy multipage
    layout until the router has run once in the server process: a shared link that opens a page
    first would run that page without app.py and list every file in pages/. Rerunning hands
    the request to the router, for good. (AppTest resets the flag before every run and routes
    through app.py itself, so it is left alone there.)"""
    # No supported way exists: Streamlit decides the legacy layout from the folder's existence alone
    # (PagesManager.uses_pages_directory, which its maintainers keep as a relic for pages/ apps:
    # streamlit#10276), and pages/ is where this project's pages live, so the flag is cleared here.
    if PagesManager.uses_pages_directory and not config.get_option("global.appTest"):
        PagesManager.uses_pages_directory = False
        st.rerun()
    # A local favicon: without one, Streamlit fetches the page's material icon from fonts.gstatic.com,
    # and the app makes no network calls.
    st.set_page_config(layout="wide", page_icon=FAVICON)
    if kernels:
        native.prepare_in_background()  # the first start on a machine builds them while the page draws


@st.cache_resource(show_spinner="Loading the models...")
def load_models():
    """(target, tiny) checkpoints. Shared by every session: read-only."""
    return load_checkpoint("target"), load_checkpoint("tiny")


@st.cache_resource(show_spinner=False)
def kept_costs() -> CostCurve:
    """This machine's verify-cost curve (specviz/adaptive/costs.py), once per server process: read from
    the disk cache, or measured (~3 s, once per CPU and version of the code) and kept there. No
    spinner: for a page that says in its own words why it waits (Home)."""
    target, _ = load_models()
    return kept_curve(target, lambda: measure(target.model))


# The spinner shows after half a second: when the curve is measured, never when it is read from disk.
@st.cache_resource(show_spinner="Measuring what a verify pass costs on this machine (once per CPU, ~3 s)...")
def machine_costs() -> CostCurve:
    """kept_costs, with a spinner while it is measured."""
    return kept_costs()


def costs_for(settings: Settings) -> CostCurve:
    """The cost curve a run with these settings prices drafts with: this machine's under adaptive K
    (from the disk cache, or measured on first use), else the reference (nothing reads it)."""
    return machine_costs() if settings.k_auto else REFERENCE


@st.cache_data(show_spinner=False)
def stored_bench() -> list[dict]:
    """The stored bench run's rows (docs/bench.jsonl; [] where it is missing or unreadable: the atlas says why)."""
    try:
        return rows_from_jsonl(BENCH.read_text())
    except (OSError, ValueError):
        return []


def models_or_stop():
    try:
        return load_models()
    except CheckpointError as e:
        st.error(f"The models could not be loaded: {md(e)}")
        st.stop()


def question(text: str) -> None:
    """The one question a page answers, in one line under its title (our words, not user text)."""
    st.markdown(f"**{text}**")


def other_cpu(cpu: str | None) -> str:
    """A sentence for a stored run's figures when they come from another CPU than this machine's ('' if not)."""
    here = cpu_name()
    return "" if cpu == here else f" That CPU is not this machine's ({here}): figures measured here would differ."
