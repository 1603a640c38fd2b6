"""The colours of every chart and of the marked-up text: Okabe and Ito's colour-blind-safe
palette (2008), with light tints of it for text backgrounds, and neutral greys and inks.

Colour is never the only cue: the text view pairs each kind with a line style (solid, dashed,
double, struck through), and the charts pair their series with hatching, markers or dashes.
tests/unit/test_palette.py fails if a colour outside this file appears in specviz/ , pages/ or ui/.
"""

# Okabe-Ito
ORANGE, SKY, GREEN, YELLOW, BLUE, VERMILLION, PURPLE = (
    "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7",
)  # fmt: skip
# Darker shades (lines and text on the tints) and light tints (text backgrounds) of the same hues
DARK_GREEN, DARK_ORANGE, DARK_VERMILLION, DARK_BLUE = "#00664A", "#9A6A00", "#A34800", "#004C77"
TINT_GREEN, TINT_ORANGE, TINT_SKY, TINT_VERMILLION, TINT_BLUE = "#C7EBDF", "#FBE6BF", "#D5ECFA", "#F7D6C2", "#BFDCEC"
MIN_FILL = "rgba(0,158,115,0.35)"  # GREEN, see-through: min(p, q) over both bars
# Neutrals
INK, TEXT, MUTED, GREY, LIGHT_GREY, LINE, PAPER = (
    "#111827",
    "#374151",
    "#6B7280",
    "#999999",
    "#CBD5E1",
    "#D1D5DB",
    "#F7F7F7",
)

# What each colour means, everywhere
P, Q, DRAWN = BLUE, ORANGE, VERMILLION  # target, draft, a token drawn from a distribution
ACCEPTED, REJECTED, CORRECTION, BONUS = GREEN, VERMILLION, ORANGE, SKY

ALLOWED = {v for k, v in dict(globals()).items() if k.isupper() and isinstance(v, str)}


def text_on(fill: str) -> str:
    """The text colour that reads on ``fill``: ink on the light hues, white on the dark ones."""
    light = {ORANGE, SKY, YELLOW, GREY, LIGHT_GREY, LINE, PAPER, TINT_GREEN, TINT_ORANGE, TINT_SKY, TINT_VERMILLION,
             TINT_BLUE}  # fmt: skip
    return INK if fill in light else "white"
