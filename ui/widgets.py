"""The two widgets every page and panel draws with: a plotly chart with the app's toolbar settings,
and a dataframe with header tooltips and pinned columns. A leaf: it imports nothing from ui/, so a
page, round_view and the method panels (ui/<method>_view.py) all import it without a circle."""

import streamlit as st

PLOTLY_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


def chart(fig, key: str) -> None:
    st.plotly_chart(fig, key=key, config=PLOTLY_CONFIG)


# Columns kept in view, on the left, when a table is wider than its column (the checks beside the
# text at 1024 px show ~300 px of ~450): which drafted token, and what became of it; which drafter (the
# shoot-out's rows).
PINNED = ("depth", "token", "drafted", "result", "block keeps", "drafter")


def table(frame, help: dict[str, str] | None = None, view: dict[str, dict] | None = None, height="auto") -> None:
    """A dataframe (it shows text as text: no markup) with a tooltip per column header, the PINNED
    columns first, and probabilities to 3 decimals. ``view``: column -> its header, width in pixels
    and marks shown in place of its values, where a narrow table needs them (charts.checks_view);
    ``height``: st.dataframe's (pixels: the rows past it scroll inside the table)."""
    help, view = help or {}, view or {}
    config = {}
    for name in frame.columns:
        v = view.get(name, {})
        common = {"label": v.get("label"), "help": help.get(name), "width": v.get("width"),
                  "pinned": name in PINNED or None}  # fmt: skip
        if marks := v.get("marks"):  # a read-only select shows each value's mark; the data keeps the word
            config[name] = st.column_config.SelectboxColumn(options=list(marks), format_func=marks.get, **common)
        elif frame[name].dtype.kind == "f":
            config[name] = st.column_config.NumberColumn(format="%.3f", **common)
        else:
            config[name] = st.column_config.Column(**common)
    st.dataframe(frame, hide_index=True, column_config=config, height=height)
