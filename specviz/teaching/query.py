"""A run as a URL query string, so a teacher can share a link that opens the same run.

Only values that differ from the defaults are written, which keeps links short. Reading is
forgiving: a value that does not parse, or is out of range, is dropped with a message and the
default used instead, so a mangled link still opens a run.
"""

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from specviz.core.markup import cut
from specviz.core.settings import Settings
from specviz.teaching.presets import APP_PRESETS, preset

DEFAULT_PRESET = APP_PRESETS[0].name
# The app's sliders are narrower than what the engine accepts; a link must fit the sliders.
APP_LIMITS = {"k": (1, 16), "temperature": (0.0, 2.0), "max_new_tokens": (1, 1000), "min_context_count": (0, 50),
              "seed": (0, 2**31 - 1), "trie_n": (2, 32), "trie_prefix_len": (1, 16), "trie_num_draft": (1, 64),
              "nasd_n": (2, 8), "nasd_filler_top_k": (1, 8), "lookup_max_ngram": (1, 8), "lookup_min_ngram": (1, 8),
              "distilled_context": (0, 10), "distilled_nodes": (1, 64), "neural_tree_nodes": (1, 64),
              "neural_tree_children": (1, 8)}  # fmt: skip
APP_LIMITS |= {"suffix_max_match": (1, 32), "suffix_min_prob": (0.0, 1.0), "suffix_max_nodes": (1, 64),
               "layer_skip_layers": (1, 3)}  # fmt: skip  # layer-skip: 1 .. n_layer - 1 of the shipped 4-layer target
APP_LIMITS |= {"medusa_nodes": (1, 64), "medusa_top_k": (1, 8)}
APP_LIMITS |= {"lookahead_window": (1, 16), "lookahead_ngram": (2, 8), "lookahead_candidates": (1, 16)}
APP_LIMITS |= {"eagle_tree_nodes": (1, 64), "eagle_tree_children": (1, 8)}


@dataclass
class RunSpec:
    """Everything that defines a run: the engine's settings and the prompt."""

    settings: Settings
    prompt: str
    preset: str | None = DEFAULT_PRESET  # the preset the prompt came from, None = free text


def _parse(kind, text: str):
    if kind is bool:
        if text.lower() in ("1", "true", "yes"):
            return True
        if text.lower() in ("0", "false", "no"):
            return False
        raise ValueError(text)
    return kind(text)


def to_query(spec: RunSpec) -> dict[str, str]:
    default = Settings()
    out = {}
    for f in fields(Settings):
        value = getattr(spec.settings, f.name)
        if value != getattr(default, f.name):
            out[f.name] = str(int(value)) if isinstance(value, bool) else str(value)
    if spec.preset is not None:
        if spec.preset != DEFAULT_PRESET:
            out["preset"] = spec.preset
    else:
        out["prompt"] = spec.prompt
    return out


def from_query(params: Mapping[str, str]) -> tuple[RunSpec, list[str]]:
    """(spec, problems): problems are plain sentences naming each value that was ignored (long
    values cut); the page escapes them, since they echo what the link said."""
    problems = []
    values = {}
    kinds = {f.name: type(getattr(Settings(), f.name)) for f in fields(Settings)}
    for name, text in params.items():
        if name in kinds:
            try:
                values[name] = _parse(kinds[name], text)
            except ValueError:
                problems.append(f"ignored {name}={cut(text)}: not a valid {kinds[name].__name__}")
    settings = Settings()
    for name, value in values.items():  # one at a time, so one bad value drops only itself
        trial = replace(settings, **{name: value})
        try:
            lo, hi = APP_LIMITS.get(name, (value, value))
            if not lo <= value <= hi:
                raise ValueError(f"must be between {lo} and {hi}")
            trial.check()
            settings = trial
        except ValueError as e:
            problems.append(f"ignored {name}={cut(params[name])}: {e}")
    if "prompt" in params:
        return RunSpec(settings, params["prompt"], None), problems
    name = params.get("preset", DEFAULT_PRESET)
    try:
        return RunSpec(settings, preset(name).text, name), problems
    except KeyError:
        problems.append(f"ignored preset={cut(name)}: no such preset")
        return RunSpec(settings, preset(DEFAULT_PRESET).text, DEFAULT_PRESET), problems
