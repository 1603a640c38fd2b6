"""On a real (BPE) model the app says "token", never "character" (issue 42): with the tiny local Llama folder
picked (tests/llm_models.py), every page the router lists is opened, run as a user would run it by default,
and all its text read: markdown, captions, alerts, labels, hover help, options, table cells, HTML blocks and
the plotly figures' JSON (titles, axis titles, hovers). A page that runs on the character GPT only declares
so in one sentence (an info naming the character GPT); what it shows after that sentence is the character
model's, so "character" may appear there, and nowhere else."""

import json
import re
from pathlib import Path

import pytest
from conftest import APP, click, rerun
from google.protobuf.json_format import MessageToDict
from test_llm_app import on_page, pick_folder

from tests.llm_models import folder

# The character model's own names, which stay its names on any page; every other "character" is a word
# about tokens that must follow the model.
NAMES = re.compile(r"\b[Cc]haracter (GPT|model)\b|one token per character")
WORD = re.compile(r"\b[Cc]haracters?\b")
DECLARATION = re.compile(r"character GPT", re.I)


def router_pages() -> list[str]:
    """Every page file app.py lists (a page added there is checked without an edit here)."""
    return re.findall(r'st\.Page\("pages/(\w+)\.py"', Path(APP).read_text())


def strings(value) -> list[str]:
    """Every string inside a decoded proto (a plotly figure's JSON is decoded and read the same way)."""
    if isinstance(value, str):
        if value.startswith("{") and '"data"' in value:
            try:
                return strings(json.loads(value))
            except ValueError:
                pass
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def node_text(node) -> list[str]:
    """The text one element shows: its proto's strings (a table's column help among them) and a table's cells."""
    out = []
    if node.type in ("dataframe", "table", "arrow_data_frame"):
        try:
            frame = node.value
        except Exception:  # noqa: BLE001  an element AppTest cannot decode: its proto's strings below
            frame = None
        if frame is not None:
            out += [str(c) for c in frame.columns] + [str(v) for v in frame.astype(str).to_numpy().ravel()]
    proto = getattr(node, "proto", None)
    if proto is not None and hasattr(proto, "DESCRIPTOR"):
        out += strings(MessageToDict(proto))
    return out


def walk(block):
    """The elements under ``block`` in the order the page draws them."""
    for child in getattr(block, "children", {}).values():
        if getattr(child, "children", None):
            if getattr(child, "proto", None) is not None:  # an expander's or a tab's label
                yield child
            yield from walk(child)
        else:
            yield child


def stray_words(at) -> list[str]:
    """Each "character(s)" the page shows outside the character model's names and outside a character-only
    page's declared part, with some text around it."""
    sidebar = [t for n in walk(at.sidebar) for t in node_text(n)]
    main, declared = [], False
    for n in walk(at.main):
        if n.type == "info" and any(DECLARATION.search(t) for t in node_text(n)):
            declared = True  # the declaration and what follows it: the character model's, labelled
        if not declared:
            main += node_text(n)
    found = []
    for text in sidebar + main:
        text = NAMES.sub("", text)
        found += [text[max(0, m.start() - 60) : m.end() + 30] for m in WORD.finditer(text)]
    return found


def run_default(at, page: str):
    """What the page runs by default, as a user would start it: a few rounds, the lesson's steps, a lab run."""
    buttons = {b.key for b in at.button}
    if page == "tree" and "switch_to_suffix" in buttons:
        click(at, "switch_to_suffix")
        buttons = {b.key for b in at.button}
    if "nav_next" in buttons:
        for _ in range(3):
            click(at, "nav_next")
    if page == "lesson":
        for _ in range(10):
            if not any(b.key == "lesson_next" and not b.disabled for b in at.button):
                break
            yield at
            click(at, "lesson_next")
    if "ex_run" in buttons:
        at.number_input(key="ex_samples").set_value(100)
        click(at, "ex_run")
    yield at


@pytest.fixture(scope="module")
def llama_app():
    from conftest import open_page

    at = open_page("pages/step.py", {"max_new_tokens": "12", "k": "3", "temperature": "0.8"})
    return pick_folder(at, folder("llama"))


@pytest.mark.parametrize("page", router_pages())
def test_no_character_on_a_bpe_model(llama_app, page):
    at = on_page(llama_app, page)
    assert at.session_state["model"].real
    for state in run_default(at, page):
        assert not state.exception, state.exception
        stray = stray_words(state)
        assert not stray, f"{page}: {stray}"


def test_the_declaration_is_one_sentence_and_the_character_model_keeps_its_words():
    """A character-only page's declaration is one info naming the character GPT, on a BPE model only; the
    check above finds "characters" where they are (the character model's Step through says them)."""
    from conftest import open_page

    at = open_page("pages/step.py", {"max_new_tokens": "12"})
    click(at, "nav_next")
    assert stray_words(at)  # the character model's pages say "characters": the check can fail
    at = rerun(pick_folder(at, folder("llama")))
    at = on_page(at, "nasd")
    infos = [i.value for i in at.info]
    assert len(infos) == 1 and DECLARATION.search(infos[0]) and infos[0].count(". ") == 0


def test_no_character_in_any_offered_drafters_rounds(llama_app):
    """Step through on every drafter the sidebar offers for the tiny Llama (chains, the suffix tree, layer-skip),
    a few rounds each, at T = 0.8: their method panels and checks say "token" too."""
    at = on_page(llama_app, "step")
    offered = at.sidebar.selectbox(key="ctl_drafter").options
    assert len(offered) >= 4, offered
    at.sidebar.number_input(key="ctl_layer_skip_layers").set_value(1)  # the tiny Llama has 2 layers
    for drafter in offered:
        at.sidebar.selectbox(key="ctl_drafter").set_value(drafter)
        rerun(at)
        for _ in range(3):
            click(at, "nav_next")
        assert at.session_state["run"].generation.settings.drafter == drafter, [e.value for e in at.error]
        stray = stray_words(at)
        assert not stray, f"{drafter}: {stray}"


def test_no_character_in_the_phases_nor_the_presenter_layout(llama_app):
    """Step through's other views of a round on the tiny Llama: phase by phase (every phase of a round) and
    both layouts."""
    at = on_page(llama_app, "step")
    at.sidebar.selectbox(key="ctl_drafter").set_value("prompt-lookup")
    rerun(at)
    while not at.session_state["run"].current or not at.session_state["run"].current.draft_tokens:
        click(at, "nav_next")
    for presenter in (True, False):
        at.toggle(key="presenter").set_value(presenter)
        rerun(at)
        assert not stray_words(at), stray_words(at)
    at.toggle(key="phase_mode").set_value(True)
    rerun(at)
    phases = 0
    while True:
        stray = stray_words(at)
        assert not stray, f"phase {phases}: {stray}"
        next_phase = at.button(key="phase_next")
        if next_phase.disabled:
            break
        click(at, "phase_next")
        phases += 1
    assert phases >= 3  # draft, verify, a check at least


def test_no_character_under_any_verification_rule(llama_app):
    """Every verification rule the sidebar offers, on a chain (prompt-lookup) and a tree (suffix) at T = 0.8:
    the rules' own panels (block weights, traversal tries, FLy's deferrals...) say "token" too."""
    at = on_page(llama_app, "step")
    rules = at.sidebar.selectbox(key="ctl_verification").options
    assert len(rules) >= 3, rules
    for drafter in ("prompt-lookup", "suffix"):
        at.sidebar.selectbox(key="ctl_drafter").set_value(drafter)
        for rule in rules:
            at.sidebar.selectbox(key="ctl_verification").set_value(rule)
            rerun(at)
            for _ in range(3):
                click(at, "nav_next")
            stray = stray_words(at)
            assert not stray, f"{drafter}, {rule}: {stray}"


def test_worded_keeps_the_character_models_names():
    """The one rule the pages' words go through: "character(s)" becomes "token(s)" over word pieces, keeping
    case and number, and the character model's names stay; over characters nothing changes."""
    from specviz.core.record import worded

    pieces, chars = ["<eos>", "the", "a"], ["a", "b", "\n"]
    text = "Characters per pass; a character. Pick the character GPT: a character model, character-level."
    assert (
        worded(text, pieces) == "Tokens per pass; a token. Pick the character GPT: a character model, character-level."
    )
    assert worded(text, chars) == text
