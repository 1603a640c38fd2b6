"""User and model text, made safe for the places that would read it as markup.

Streamlit's markdown (st.markdown, alerts, headings, captions, tab labels) turns **x**, _x_,
$x$ (LaTeX), :smile: and :material/icon: shortcodes, :red[x] directives, [a](b) links and
&amp; entities into formatting. ``md(text)`` backslash-escapes every ASCII punctuation character
(CommonMark lets any of them be escaped, and Streamlit's shortcode and math passes respect the
escapes), so the text shows as typed. A newline would end a heading or a list item: it shows
as ↵, as everywhere else in the app.

Plotly reads a subset of HTML in titles, tick labels and hover text (<b>, <br>, <a href>,
entities): ``plotly_text(text)`` escapes it. Matplotlib's equivalent (mathtext between $ signs)
is in specviz.bench.chart.

Every string a user or the model supplied goes through one of these (or a widget that renders
no markup: st.text, st.code, dataframes, st.html of html.escape'd text) on its way to the screen.
"""

import html
import json
import re

_PUNCT = re.compile(r"([!-/:-@\[-`{-~])")  # every ASCII punctuation character


def md(text, limit: int | None = None) -> str:
    """``text`` as Streamlit markdown that renders as exactly these characters (newlines as ↵),
    cut to ``limit`` characters first when given."""
    text = str(text)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return _PUNCT.sub(r"\\\1", text.replace("\r", "").replace("\n", "\u21b5"))


def plotly_text(text) -> str:
    """``text`` for a plotly title, tick label or legend entry: shown as typed, not as HTML."""
    return html.escape(str(text), quote=False)


def cut(value, n: int = 100) -> str:
    """A user's value quoted in a plain-text message: its repr, cut to ``n`` characters."""
    text = repr(value)
    return text if len(text) <= n else text[: n - 1] + "…"


def script_json(value) -> str:
    """``value`` as JSON that is safe inside an HTML <script>: <, > and & are escaped, so no text
    can close the element (</script>) or open a comment; the JavaScript reads the same strings."""
    return json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
