"""The app's own presets never trigger its own warnings (ui/controls.py: checked_prompt, and the note on a
prompt longer than the model's window): every preset, and every drafter's preset (its "Show X on Y" button)."""

import pytest

from specviz.core.settings import Settings
from specviz.drafters import REGISTRY
from specviz.teaching.presets import APP_PRESETS, PRESETS, preset

CHOICES = {p.name for p in PRESETS} | {p.name for p in APP_PRESETS} | {cls.preset for cls in REGISTRY.values()}


@pytest.mark.parametrize("name", sorted(CHOICES))
def test_preset_fits_the_window_and_the_vocabulary(target, name):
    ids = target.tokenizer.encode(preset(name).text)  # UnknownCharactersError: checked_prompt's error
    assert 0 < len(ids) <= target.config.block_size, (name, len(ids))


@pytest.mark.parametrize("drafter", sorted(REGISTRY))
def test_show_drafter_on_its_preset_is_a_valid_run(drafter):
    Settings(drafter=drafter).check()  # the button keeps the other settings: the defaults here
    assert REGISTRY[drafter].preset in {p.name for p in PRESETS}
