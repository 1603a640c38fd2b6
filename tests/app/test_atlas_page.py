"""The atlas page in AppTest: each method's row links to its step page."""

from urllib.parse import parse_qsl

from conftest import open_page

from specviz.teaching.atlas import methods


def test_the_atlas_page_links_each_method_to_its_step_page():
    at = open_page("pages/atlas.py", timeout=300)
    frame = at.dataframe[0].value
    assert list(frame["method"]) == [m.name for m in methods()]
    link = dict(parse_qsl(frame["open"][list(frame["method"]).index("suffix")].split("?", 1)[1]))
    step = open_page("pages/step.py", link, timeout=300)
    assert step.session_state["run"].generation.settings.drafter == "suffix"


def test_the_atlas_says_where_its_figures_come_from():
    """The stored run names its CPU and date and says when that CPU is not this one; once this machine
    is measured (the button's result, seeded here: the real one takes a minute), its figures are shown,
    labelled as this machine's, with the run-to-run spread."""
    import json

    from conftest import ROOT, shown

    from specviz.adaptive.costs import cpu_name

    at = open_page("pages/atlas.py", timeout=300)
    stored = json.loads((ROOT / "docs" / "bench.jsonl").read_text().splitlines()[0])
    said = " ".join(shown(c.value) for c in at.caption)
    assert f"A stored run: {stored['version']} on {stored['cpu']}, {stored['date']}" in said
    assert ("That CPU is not this machine's" in said) == (stored["cpu"] != cpu_name())
    # the spread it states: the repeats' min-max where the run kept them, else the baseline's A/A pair
    assert "From run to run a method's speedup moved by" in said or "what noise alone does" in said
    assert at.button(key="atlas_measure")
    mine = [dict(r, cpu=cpu_name(), speedup_min=r["speedup"] * 0.9, speedup_max=r["speedup"] * 1.1)
            for r in map(json.loads, (ROOT / "docs" / "bench.jsonl").read_text().splitlines())]  # fmt: skip
    at.session_state["atlas_measured"] = mine
    at.run()
    assert not at.exception, at.exception
    said = " ".join(shown(c.value) for c in at.caption)
    assert f"Measured just now on this machine: {cpu_name()}" in said and "From run to run" in said
    assert "That CPU is not" not in said


def test_the_atlas_offers_the_lossy_rules_bias_beside_their_speed():
    """The lossy methods (hatched in the speed chart) are named in the bias section, FLy among them
    through its registry entry, with the button that runs the Exactness lab on each
    (specviz.teaching.atlas.bias_rows, tested in tests/unit/test_fly.py)."""
    from conftest import shown

    at = open_page("pages/atlas.py", timeout=300)
    said = " ".join(shown(c.value) for c in at.caption)
    lossy = [m.name for m in methods() if not m.lossless]
    assert {"neural (fly)", "medusa (typical)", "nasd (nasd-seed)"} <= set(lossy)
    assert f"The Exactness lab on each lossy method ({', '.join(lossy)})" in said and at.button(key="atlas_bias")
