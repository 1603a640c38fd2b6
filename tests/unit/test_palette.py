"""Every colour in the app comes from the colour-blind-safe palette, and text on a coloured fill
stays readable (WCAG contrast for large text and graphics, >= 3)."""

import re

import pytest
from conftest import ROOT

from specviz.charts import palette

HEX = re.compile(r"#[0-9a-fA-F]{6}\b")
RGBA = re.compile(r"rgba?\([^)]*\)")


def sources():
    return [
        p
        for p in [*ROOT.glob("specviz/**/*.py"), *ROOT.glob("pages/*.py"), *ROOT.glob("ui/*.py")]
        if p.name != "palette.py"
    ]


def test_every_colour_is_from_the_palette():
    allowed = {c.upper() for c in palette.ALLOWED}
    found = {}
    for p in sources():
        text = p.read_text()
        for c in HEX.findall(text) + RGBA.findall(text):
            found.setdefault(c.upper(), p.name)
    assert len(found) >= 10  # the scan does see the charts' colours
    stray = {c: where for c, where in found.items() if c not in allowed}
    assert not stray, f"colours outside specviz/charts/palette.py: {stray}"


def luminance(hex_colour: str) -> float:
    rgb = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: str, b: str) -> float:
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


@pytest.mark.parametrize("fill", [palette.ORANGE, palette.SKY, palette.GREEN, palette.BLUE, palette.VERMILLION,
                                  palette.GREY, palette.LIGHT_GREY, palette.TEXT, palette.YELLOW])  # fmt: skip
def test_text_on_a_fill_is_readable(fill):
    ink = palette.text_on(fill)
    assert contrast(fill, "#FFFFFF" if ink == "white" else ink) >= 3.0
