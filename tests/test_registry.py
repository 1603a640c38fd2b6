"""A method is one file plus one registry line: a drafter defined in this file alone, registered here,
shows up in the CLI's choices, the app's drafter list and the atlas, and runs rounds through the
engine. And the declarations hold: every knob has its help and range, every drafter its traits."""

from pathlib import Path

import pytest
from conftest import assert_plain_greedy
from streamlit.testing.v1 import AppTest

from specviz.cli.main import build_parser, main
from specviz.core.engine import Generation
from specviz.core.settings import KNOBS, Settings, method_knobs
from specviz.devtools import circles, graph
from specviz.drafters import REGISTRY, Drafter, chain, drafter_class, drafter_names, register
from specviz.teaching.atlas import methods
from specviz.teaching.presets import preset
from specviz.teaching.query import from_query
from specviz.verifiers import VERIFIERS

APP = Path(__file__).resolve().parents[1] / "app.py"


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


def test_every_knob_is_declared_once_with_its_help_and_range():
    default = Settings()
    for name, k in KNOBS.items():
        assert k.label and k.help.endswith("."), name
        value = getattr(default, name)
        assert k.problem(value, default) is None, name  # every default passes its own check
        if k.lo is not None:
            lo, hi = k.limits(default)
            app_lo, app_hi = k.app_limits()
            assert lo <= app_lo or (k.zero and app_lo == 0), name  # the app's range is never wider than the engine's
            assert app_lo <= app_hi <= hi, name
        for method in k.method:
            assert method in REGISTRY, (name, method)  # a knob belongs to a drafter that exists
    assert Settings(drafter="echo-not-registered").__hash__  # still a plain hashable value
    with pytest.raises(ValueError, match="K must be between 1 and 32, got 33"):
        Settings(k=33).check()
    with pytest.raises(ValueError, match=r"trie L_p must be below trie_n \(13\), got 13"):
        Settings(trie_prefix_len=13).check()
    with pytest.raises(ValueError, match="temperature must be 0 or between 0.01 and 10.0, got nan"):
        Settings(temperature=float("nan")).check()


def test_every_drafter_declares_its_traits():
    for name, cls in REGISTRY.items():
        assert cls.summary and cls.paper and preset(cls.preset), name
        assert not cls.sampled_tree or cls.tree, name  # a sampled tree is a tree
        assert cls.needs <= {"draft_model", "target_cache", "corpus", "heads"}, name
        assert all(name in k.method for k in method_knobs(name).values())
    assert drafter_names(drafts=False) == ("none",)  # one baseline
    assert len(drafter_names(featured=True)) == 1  # Home's race opens with one
    assert [d for d in REGISTRY if "draft_model" in drafter_class(d).needs] == ["neural", "neural-tree"]
    for v in VERIFIERS.values():
        assert v.summary and all(d in REGISTRY for d in v.showcase), v.name
        assert v.bench_on in ("", "chains", "trees") and (not v.bench_on or v.lossless), v.name


def test_verifiers_say_which_drafts_they_refuse():
    block, mismatch = VERIFIERS["block"], VERIFIERS["replacement-mismatch"]
    assert block.refuses(drafter_class("trie"), Settings()) and not block.refuses(drafter_class("trigram"), Settings())
    assert mismatch.refuses(drafter_class("trigram"), Settings())
    assert not mismatch.refuses(drafter_class("neural-tree"), Settings(tree_sampling="without-replacement"))
    assert mismatch.refuses(drafter_class("neural-tree"), Settings(tree_sampling="with-replacement"))
    with pytest.raises(ValueError, match="checks chains only"):
        Settings(drafter="trie", verification="block").check()


def test_no_import_circles():
    assert circles(graph()) == []


def test_no_method_name_is_written_in_the_engine_cli_bench_or_app():
    """A method is named in its own file and its registry line; the engine, the CLI, the bench and the
    pages read the registries. (Settings' declarations say which drafters a knob belongs to.)"""
    import ast

    root = Path(__file__).resolve().parents[1]
    names = set(REGISTRY) | set(VERIFIERS)
    places = [*(root / "specviz" / "core").glob("*.py"), *(root / "specviz" / "cli").glob("*.py"),
              *(root / "specviz" / "bench").glob("*.py"), *(root / "ui").glob("*.py")]  # fmt: skip
    found = []
    for path in places:
        if path.name == "settings.py":
            continue
        tree = ast.parse(path.read_text())
        docstrings = {id(n.body[0].value) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef |
                      ast.Module) and n.body and isinstance(n.body[0], ast.Expr)}  # fmt: skip
        found += [f"{path.relative_to(root)}:{n.lineno} {n.value!r}" for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and n.value in names and id(n) not in docstrings]  # fmt: skip
    assert found == []
