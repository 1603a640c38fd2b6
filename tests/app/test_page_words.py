"""Every page as a class sees it: no "seed 00x" (papers and posts are cited by name), no Python None shown as
a value, and every abbreviation defined on the page where it appears."""

import re

import pytest
from conftest import open_page, shown

PAGES = ["home", "lesson", "step", "tree", "nasd", "shootout", "atlas", "exactness", "acceptance", "load", "vllm"]


def _defines(symbol: str, model: str) -> str:
    """A definition of a probability symbol: "p is the target's probability", "p, the target's distribution",
    or "a target distribution p"."""
    what = r"(model's )?(probabilit\w*|distribution)"
    return rf"\b{symbol}(\(x\))?,? (is |= |: )?(the |a )?{model}('s)? {what}|\b(the |a ){model}('s)? {what} {symbol}\b"


# abbreviation (a regex) -> its definition (a regex), which must appear on the same page
ABBREVIATIONS = {
    r"\bdof\b": r"degrees of freedom",
    r"\bTV\b": r"total variation",
    r"\bKV\b": r"\bkeys? and values?\b",
    r"α": r"acceptance rate",
    r"τ": r"tokens per (target )?forward",
    r"re-prefill": r"window moved|window moves",
    r"\bTTT\b": r"training-time test",
    r"\bMTP\b": r"multi-token prediction",
    r"\bMB\b": r"megabytes?",
    r"\btok/s\b": r"tokens per second",
    # p and q, wherever a page writes p/q or p(x)/q(x): which model each is the probability of
    r"\bp/q\b|p\(x\)/q\(x\)": _defines("p", "target"),
    r"\bq/p\b|\bp/q\b|p\(x\)/q\(x\)": _defines("q", "draft(er)?"),
}


def page_text(at, help: bool = True) -> str:
    """Every text the page sends: markdown, captions, alerts, titles, labels, tables' headers and cells, and
    with ``help`` the hover help (which a projector's audience does not see)."""
    out = []
    fields = ("body", "label", "value", "help", "text") if help else ("body", "label", "value", "text")
    for kind in ("title", "header", "subheader", "markdown", "caption", "info", "warning", "error", "success",
                 "latex", "code", "text", "metric", "expander", "tabs"):  # fmt: skip
        for el in at.get(kind):
            proto = el.proto
            out += [str(getattr(proto, f, "")) for f in fields]
    for kind in ("button", "toggle", "checkbox", "radio", "selectbox", "slider", "select_slider", "number_input",
                 "text_area", "segmented_control", "multiselect", "text_input"):  # fmt: skip
        for el in at.get(kind):
            out += [str(getattr(el.proto, f, "")) for f in fields if f in ("label", "help")]
    for kind in ("dataframe", "table"):
        for el in at.get(kind):
            try:
                frame = el.value
            except Exception:  # noqa: BLE001  an element AppTest cannot decode: its text is checked elsewhere
                continue
            out += [str(c) for c in frame.columns]
            out += [str(v) for v in frame.astype(str).to_numpy().ravel() if isinstance(v, str)]
    return "\n".join(out)


@pytest.mark.parametrize("page", PAGES)
def test_page_words(page):
    check_words(open_page(f"pages/{page}.py", timeout=300))


def check_words(at) -> None:
    # as read on screen: markdown's backslash escapes (specviz.core.markup.md) would hide a definition
    text, on_screen = shown(page_text(at)), shown(page_text(at, help=False))
    assert not re.search(r"seed 0", text, re.IGNORECASE), re.findall(r".{40}seed 0.{20}", text, re.IGNORECASE)
    assert not re.search(r"(?<![\w'\"])None(?![\w'\"])", text), re.findall(r".{40}\bNone\b.{20}", text)
    # an abbreviation on screen is defined on screen; one only in a hover help, there or on screen
    missing = [a for a, d in ABBREVIATIONS.items() if (re.search(a, on_screen) and not re.search(d, on_screen, re.I))
               or (re.search(a, text) and not re.search(d, text, re.I))]  # fmt: skip
    assert not missing, missing


@pytest.mark.parametrize(("page", "button", "times"), [("step", "nav_next", 3), ("lesson", "lesson_next", 3)])
def test_page_words_after_a_few_steps(page, button, times):
    at = open_page(f"pages/{page}.py", timeout=300)
    for _ in range(times):
        at.button(key=button).click().run()
        assert not at.exception, at.exception
        check_words(at)


def test_exactness_results_words():
    at = open_page("pages/exactness.py", timeout=300)
    at.button(key="ex_run").click().run()
    assert not at.exception, at.exception
    check_words(at)


def _method_runs() -> list[tuple[str, dict]]:
    """Every method that draws a panel of its own, from the registries: each drafter on its preset, each
    verifier with a panel on the trigram drafter at T = 0.8. A method added later is checked too."""
    from specviz.drafters import REGISTRY
    from specviz.verifiers import VERIFIERS

    runs = [("pages/step.py", {"drafter": d, "preset": c.preset}) for d, c in REGISTRY.items() if c.panels]
    runs += [("pages/step.py", {"drafter": "trigram", "verification": v, "temperature": "0.8"})
             for v, c in VERIFIERS.items() if c.panels]  # fmt: skip
    runs += [("pages/tree.py", {"drafter": d, "preset": c.preset}) for d, c in REGISTRY.items() if c.tree][:2]
    return runs + [("pages/nasd.py", {"drafter": "nasd", "preset": "Repetitive"})]


@pytest.mark.parametrize(
    ("page", "query"), _method_runs(), ids=lambda x: x if isinstance(x, str) else "-".join(x.values())
)
def test_method_panels_words(page, query):
    """Each method's panels after two rounds: what a class reads there passes the same checks."""
    at = open_page(page, query, timeout=300)
    for _ in range(2):
        at.button(key="nav_next").click().run()
        assert not at.exception, at.exception
    check_words(at)


def test_shootout_results_words():
    at = open_page("pages/shootout.py", {"max_new_tokens": "8", "k": "2"}, timeout=600)
    at.button(key="shootout_run").click().run()
    assert not at.exception, at.exception
    check_words(at)
