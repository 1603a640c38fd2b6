"""The two widgets every page and panel draws with: a plotly chart with the app's toolbar settings,
and a dataframe with header tooltips and pinned columns. A leaf: it imports nothing from ui/, so a
page, round_view and the method panels (ui/<method>_view.py) all import it without a circle."""

import streamlit as st

from specviz.core.record import word_pieces, worded

PLOTLY_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


def _reworded(fig, vocab: list[str]):
    """``fig`` with its own words (title, axis titles, annotations, trace names and hovers) in ``vocab``'s unit:
    "tokens" over word pieces. The data (a token's text among them) is left as it is."""
    say = lambda text: worded(text, vocab) if isinstance(text, str) else text  # noqa: E731
    layout = fig.layout
    if layout.title.text:
        layout.title.text = say(layout.title.text)
    for axis in (*fig.select_xaxes(), *fig.select_yaxes()):
        if axis.title.text:
            axis.title.text = say(axis.title.text)
    for note in layout.annotations:
        note.text = say(note.text)
    for trace in fig.data:
        for name in ("name", "hovertemplate"):
            if name in trace and (text := trace[name]) and (said := say(text)) != text:
                trace[name] = said
    return fig


def chart(fig, key: str, vocab: list[str] | None = None) -> None:
    """``vocab``: the run's, where the chart shows a run: its words follow the model (specviz.core.record.worded)."""
    if vocab is not None and word_pieces(vocab):
        fig = _reworded(fig, vocab)
    st.plotly_chart(fig, key=key, config=PLOTLY_CONFIG)


# Columns kept in view, on the left, when a table is wider than its column (the checks beside the
# text at 1024 px show ~300 px of ~450): which drafted token, and what became of it; which drafter (the
# shoot-out's rows).
PINNED = ("depth", "token", "drafted", "result", "block keeps", "drafter")


# Shown in place of a missing value (Python's None), and what it means, added to the column's help.
NONE_MARK = "—"
NONE_HELP = f"{NONE_MARK}: none here (nothing was drawn, scored or measured for this row)."
CHAR_PX, PAD_PX, MAX_PX = 8, 18, 220  # a column's width from its longest text, at the grid's 14 px font


def _numbers(column) -> bool:
    """Whether a column holds numbers only (and missing values): numpy scalars mixed with None come as objects."""
    values = [v for v in column if v is not None and v == v]
    return bool(values) and all(isinstance(v, int | float) and not isinstance(v, bool) or hasattr(v, "dtype")
                                for v in values)  # fmt: skip


def table(frame, help: dict[str, str] | None = None, view: dict[str, dict] | None = None, height="auto",
          row_height: int | None = None, vocab: list[str] | None = None) -> None:  # fmt: skip
    """A dataframe (it shows text as text: no markup) with a tooltip per column header, the PINNED
    columns first, and probabilities to 3 decimals. ``view``: column -> its header ("label"), width in
    pixels ("width"), marks shown in place of its values where a narrow table needs them ("marks",
    charts.checks_view), a number format other than 3 decimals ("format": "%.2f"), or the text a link
    column shows ("link").
    A missing value reads NONE_MARK, explained in its column's help; a column is as wide as its
    header or its longest value, whichever is longer, so neither is cut. ``height``: st.dataframe's
    (pixels: the rows past it scroll inside the table); ``row_height``: pixels, for rows of wrapped text.
    ``vocab``: the run's, where the table shows a run: headers and help in its model's words."""
    help, view = help or {}, view or {}
    if vocab is not None and word_pieces(vocab):  # "token" over word pieces; the cells are data, left as they are
        names = {name: worded(str(name), vocab) for name in frame.columns}
        frame = frame.rename(columns=names)
        help = {names.get(name, name): worded(tip, vocab) for name, tip in help.items()}
        view = {names.get(name, name): v | ({"label": worded(v["label"], vocab)} if v.get("label") else {})
                for name, v in view.items()}  # fmt: skip
    frame = frame.copy()
    config = {}
    for name in frame.columns:
        v = view.get(name, {})
        column = frame[name]
        if column.dtype.kind == "O" and _numbers(column):
            column = frame[name] = column.astype(float)
        fmt = v.get("format", "%.3f")
        tip = help.get(name)
        if column.isna().any():
            tip = f"{tip} {NONE_HELP}" if tip else NONE_HELP
            if column.dtype.kind == "f":  # a number column shows NaN as "None": the numbers as text instead
                column = frame[name] = column.map(lambda x, fmt=fmt: NONE_MARK if x != x else fmt % x)
            else:
                # all text: a column of True/False and the mark would not convert to Arrow (Streamlit logs a traceback)
                column = frame[name] = column.map(lambda x: NONE_MARK if x is None or x != x else str(x))
        header = v.get("label") or str(name)
        shown = (fmt % x if column.dtype.kind == "f" else str(x) for x in column)
        longest = max([len(header), *map(len, shown)])
        width = v.get("width") or min(MAX_PX, CHAR_PX * longest + PAD_PX)
        common = {"label": v.get("label"), "help": tip, "width": width, "pinned": name in PINNED or None}
        if link := v.get("link"):
            config[name] = st.column_config.LinkColumn(display_text=link, **common)
        elif marks := v.get("marks"):  # a read-only select shows each value's mark; the data keeps the word
            config[name] = st.column_config.SelectboxColumn(options=list(marks), format_func=marks.get, **common)
        elif column.dtype.kind == "f":
            config[name] = st.column_config.NumberColumn(format=fmt, **common)
        else:
            config[name] = st.column_config.Column(**common)
    st.dataframe(frame, hide_index=True, column_config=config, height=height, row_height=row_height)
