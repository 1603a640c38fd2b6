"""Prompts that show different behaviour: the app's presets and the benchmark's prompt set.

    free        a speaker's name and nothing to copy: the drafter must guess from statistics
    repetitive  a line repeated: n-gram and lookup drafters can copy whole runs
    quote       a passage, then its opening again: the continuation quotes the passage
    structured  dialogue with speaker names that recur every few lines

Every character is in Tiny Shakespeare's vocabulary. The passages are from the public-domain
plays the corpus was built from; they are short, so nothing here ships the corpus itself.
"""

from dataclasses import dataclass

# Every preset stays inside the model's 256-character window (tests/unit/test_presets.py): the app
# warns about a longer prompt, and its own presets never trigger its warnings.
# The quote presets stay inside the model's 256-character window: the target can only quote
# what it can see, so the passage and its repeated opening must fit in one window.
_GLOUCESTER = """GLOUCESTER:
Now is the winter of our discontent
Made glorious summer by this sun of York;
And all the clouds that lour'd upon our house
In the deep bosom of the ocean buried.
"""

_CITIZENS = """First Citizen:
Before we proceed any further, hear me speak.

All:
Speak, speak.

First Citizen:
First, you know Caius Marcius is chief enemy to the people.

All:
We know't, we know't.

"""

_RICHARD = """KING RICHARD II:
Old John of Gaunt, time-honour'd Lancaster,
Hast thou, according to thy oath and band,
Brought hither Henry Hereford thy bold son,
Here to make good the boisterous late appeal,
"""

# Feste's refrain (Twelfth Night), sung three times: it fits the model's window with room to spare.
_REFRAIN = "With hey, ho, the wind and the rain,\nFor the rain it raineth every day.\n" * 3


@dataclass(frozen=True)
class Preset:
    name: str
    kind: str  # free, repetitive, quote, structured
    text: str
    blurb: str  # what a teacher should expect to see


PRESETS = (
    Preset("Free verse", "free", "ROMEO:\n", "Nothing to copy: drafters guess from character statistics."),
    Preset(
        "Repetitive",
        "repetitive",
        "the cat sat on the mat.\nthe cat sat on the mat.\nthe cat sat on the",
        "A line repeated: lookup and n-gram drafters copy whole runs and most drafts are accepted.",
    ),
    Preset(
        "Quote a passage",
        "quote",
        _GLOUCESTER + "\nGLOUCESTER:\nNow is the winter of our",
        "A passage, then its opening again: the target quotes it, and prompt lookup or the trie drafts it.",
    ),
    Preset(
        "Dialogue",
        "structured",
        _CITIZENS + "First Citizen:\n",
        "Speaker names recur every few lines: structure an n-gram drafter can learn from the prompt.",
    ),
    Preset("A king speaks", "free", "KING RICHARD II:\n", "A speaker's name only: free continuation."),
    Preset(
        "Quote a long speech",
        "quote",
        _RICHARD + "\nKING RICHARD II:\nOld John of Gaunt, time-honour'd",
        "A longer passage to quote from, as long as the model's window allows.",
    ),
    Preset(
        "Counting",
        "repetitive",
        "one, two, three, four, five; one, two, three, four, five; one, two, three,",
        "A short cycle: every drafter that reads the context does well.",
    ),
    Preset("Mid-sentence", "free", "What say you, my lord? I will not", "Free continuation from mid-sentence."),
    Preset(
        "Dialogue, quoted",
        "structured",
        _CITIZENS + "First Citizen:\nBefore we proceed",
        "Dialogue whose first line comes back: structure plus quoting.",
    ),
)
# The methods atlas (issue 14): where suffix decoding shines, and where it cannot.
PRESETS += (
    Preset(
        "A song's refrain",
        "repetitive",
        _REFRAIN + "With hey, ho,",
        "A refrain sung three times: suffix decoding matches a long suffix in the context (and the corpus) and "
        "drafts deep, confident chains.",
    ),
    Preset(
        "Gibberish",
        "free",
        "zqx vbj, kwy plm; gxt qzv jkw: vpl zyx",
        "Letters in no order: only a character or two matches in the context or the corpus, so suffix "
        "decoding's trees stay small and shallow and it cannot help (until the model drifts back to Shakespeare).",
    ),
)

APP_PRESETS = PRESETS[:4]  # the sidebar's short list; the benchmark uses them all


def preset(name: str) -> Preset:
    for p in PRESETS:
        if p.name == name:
            return p
    raise KeyError(f"no preset named {name!r}; choose one of: {', '.join(p.name for p in PRESETS)}")
