"""Character-level tokenizer: one id per distinct character of the training corpus.

Outside this module and the model's, a token is an id whose text is its *piece* (``pieces``): one
character here, several for a BPE tokenizer; code that shows tokens joins or labels pieces and never
assumes a piece is one character long."""


class UnknownCharactersError(ValueError):
    """Text holds characters the model has never seen. ``chars`` lists them, in order of first
    appearance, so a caller can name them or offer to drop them."""

    def __init__(self, chars: list[str]):
        self.chars = chars
        shown = ", ".join(f"{c!r} (U+{ord(c):04X})" for c in chars)
        super().__init__(f"characters not in the vocabulary: {shown}")


class CharTokenizer:
    def __init__(self, chars: str):
        if len(set(chars)) != len(chars):
            raise ValueError("vocabulary characters must be distinct")
        self.chars = chars
        self.stoi = {c: i for i, c in enumerate(chars)}
        self.pieces = list(chars)  # each id's text, in id order: one character each

    def piece(self, token: int) -> str:
        """The text of one token id."""
        return self.pieces[token]

    @classmethod
    def from_text(cls, text: str) -> "CharTokenizer":
        return cls("".join(sorted(set(text))))

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def unknown_chars(self, text: str) -> list[str]:
        return list(dict.fromkeys(c for c in text if c not in self.stoi))

    def encode(self, text: str) -> list[int]:
        unknown = self.unknown_chars(text)
        if unknown:
            raise UnknownCharactersError(unknown)
        return [self.stoi[c] for c in text]

    def decode(self, ids) -> str:
        return "".join(self.chars[int(i)] for i in ids)
