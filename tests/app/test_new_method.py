"""A method is one file plus one registry line: a drafter defined in this file alone, registered here,
shows up in the CLI's choices, the app's drafter list and the atlas, and runs rounds through the
engine."""

import pytest
from conftest import APP, assert_plain_greedy
from streamlit.testing.v1 import AppTest

from specviz.cli.main import build_parser, main
from specviz.core.engine import Generation
from specviz.core.settings import Settings
from specviz.drafters import REGISTRY, Drafter, chain, drafter_class, drafter_names, register
from specviz.teaching.atlas import methods
from specviz.teaching.presets import preset
from specviz.teaching.query import from_query


class EchoDrafter(Drafter):
    """Proposes the last character again, K times: one-hot guesses, right in runs of a letter."""

    name = "echo"
    summary = "the last character, repeated"
    paper = "this test's own drafter"
    preset = "Repetitive"
    deterministic = True

    def draft(self, context, k, temperature, gen):
        return chain([context[-1]] * k)


@pytest.fixture
def echo():
    """EchoDrafter in the registry for one test, and out of it afterwards."""
    register(EchoDrafter)
    yield EchoDrafter
    del REGISTRY[EchoDrafter.name]


def test_a_new_drafter_is_a_file_and_a_registry_line(echo, target, capsys):
    assert "echo" in drafter_names() and drafter_class("echo") is EchoDrafter
    # the CLI: its help lists it, and a run with it works
    help_text = build_parser()._subparsers._group_actions[0].choices["generate"].format_help()
    assert "echo" in help_text
    assert main(["generate", "--drafter", "echo", "--prompt", "aaaa", "--max-new-tokens", "6", "--k", "3"]) == 0
    assert "drafter echo" in capsys.readouterr().err
    # the atlas lists it with its own words
    (row,) = [m for m in methods() if m.drafter == "echo"]
    assert (row.source, row.paper, row.preset, row.lossless) == (echo.summary, echo.paper, "Repetitive", True)
    # a link may name it, and the settings accept it
    spec, problems = from_query({"drafter": "echo"})
    assert spec.settings.drafter == "echo" and not problems
    # a round through the engine: its draft is verified like any other, and greedy output is the target's
    ids = target.tokenizer.encode(preset("Repetitive").text)
    gen = Generation(target, ids, Settings(drafter="echo", k=3, temperature=0.0, max_new_tokens=40))
    record = gen.step()
    assert record.draft_tokens == [ids[-1]] * 3 and len(record.emitted) == record.n_accepted + 1
    assert_plain_greedy(target, ids, gen.run().tokens)


def test_the_app_lists_a_new_drafter(echo):
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.switch_page("pages/step.py")
    at.run()
    assert not at.exception
    assert "echo" in at.sidebar.selectbox(key="ctl_drafter").options
