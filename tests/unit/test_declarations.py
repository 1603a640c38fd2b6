"""The declarations hold: every knob has its help and ranges, every drafter and verifier its traits,
the import graph has no circle, and no method is named outside its own file and the declarations."""

import ast

import pytest
from conftest import ROOT

from specviz.core.settings import KNOBS, Settings, method_knobs
from specviz.devtools import circles, graph
from specviz.drafters import REGISTRY, drafter_class, drafter_names
from specviz.teaching.presets import preset
from specviz.verifiers import VERIFIERS


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
            top = KNOBS[k.hi].app_limits()[1] if isinstance(k.hi, str) else hi  # another knob's bound: its widest
            assert app_lo <= app_hi <= top, name
        for method in k.method:
            assert method in REGISTRY, (name, method)  # a knob belongs to a drafter that exists
    assert hash(Settings(k=5)) == hash(Settings(k=5)) and Settings(k=5) != Settings(k=6)  # a plain value: keys runs
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
    root = ROOT
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
