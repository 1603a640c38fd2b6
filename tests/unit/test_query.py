"""A run survives the trip through the URL, and a mangled link still opens a run."""

from specviz.core.settings import Settings
from specviz.drafters import drafter_names
from specviz.teaching.presets import APP_PRESETS
from specviz.teaching.query import DEFAULT_PRESET, RunSpec, from_query, to_query

DRAFTERS = drafter_names()


def test_round_trip_keeps_every_setting():
    s = Settings(drafter="nasd", k=7, temperature=0.0, seed=42, max_new_tokens=90, min_context_count=5,
                 trie_n=9, nasd_stop_if_unknown=False, verification="nasd-seed")  # fmt: skip
    for spec in [RunSpec(s, APP_PRESETS[2].text, APP_PRESETS[2].name), RunSpec(s, "<b>x</b> & more", None)]:
        q = to_query(spec)
        assert all(isinstance(v, str) for v in q.values())
        back, problems = from_query(q)
        assert problems == [] and back == spec


def test_defaults_give_an_empty_query():
    assert to_query(RunSpec(Settings(), APP_PRESETS[0].text, DEFAULT_PRESET)) == {}


def test_bad_values_are_dropped_with_a_message():
    spec, problems = from_query({"k": "many", "temperature": "9", "drafter": "oracle", "seed": "3", "preset": "nope"})
    assert spec.settings.k == Settings().k and spec.settings.temperature == Settings().temperature
    assert spec.settings.drafter == Settings().drafter and spec.settings.seed == 3
    assert spec.preset == DEFAULT_PRESET
    assert len(problems) == 4 and any("k='many'" in p for p in problems) and any("oracle" in p for p in problems)


def test_out_of_range_numbers_in_a_link_are_dropped_with_a_message():
    params = {"temperature": "1e-320", "seed": str(2**64), "k": "1e9", "max_new_tokens": "inf"}
    for name, text in params.items():
        spec, problems = from_query({name: text})
        assert spec.settings == Settings() and len(problems) == 1 and problems[0].startswith(f"ignored {name}=")
    spec, problems = from_query({"temperature": "nan"})
    assert spec.settings.temperature == Settings().temperature and len(problems) == 1
    spec, problems = from_query({"prompt": "x", "drafter": "y" * 100_000})
    # the value is cut (it is quoted twice); the rest is the list of drafters to choose from
    assert "…" in problems[0] and len(problems[0]) < 300 + len(", ".join(DRAFTERS))
