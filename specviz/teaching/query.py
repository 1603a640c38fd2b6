"""A run as a URL query string, so a teacher can share a link that opens the same run.

Only values that differ from the defaults are written, which keeps links short. Reading is
forgiving: a value that does not parse, or is out of range, is dropped with a message and the
default used instead, so a mangled link still opens a run.
"""

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from specviz.core.markup import cut
from specviz.core.settings import KNOBS, Settings
from specviz.teaching.presets import APP_PRESETS, preset

DEFAULT_PRESET = APP_PRESETS[0].name


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
            lo, hi = KNOBS[name].app_limits() or (value, value)  # a link must fit the app's widgets
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
