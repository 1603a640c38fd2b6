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

    def __eq__(self, other) -> bool:  # equal vocabularies encode alike (a cache of a corpus's ids keys on it)
        return isinstance(other, CharTokenizer) and other.chars == self.chars

    def __hash__(self) -> int:
        return hash(self.chars)

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


# How a piece's whitespace shows where tokens are drawn one by one: a space as a middle dot, a newline as
# a return arrow (then the line break), a tab as an arrow; everything else as it is.
MARKERS = {" ": "\u00b7", "\n": "\u21b5\n", "\t": "\u2192"}


def marked(piece: str) -> str:
    """A piece with visible markers for its spaces, newlines and tabs ("the" after a space: "·the")."""
    return "".join(MARKERS.get(c, c) for c in piece)


class PieceTokenizer:
    """A transformers tokenizer (BPE, SentencePiece) seen as CharTokenizer is: ids in, ids out, and each id's
    text as its piece. ``vocab_size`` is the model's row width, which may exceed the tokenizer's own
    vocabulary (padded embeddings): those ids have the empty piece."""

    def __init__(self, tokenizer, vocab_size: int):
        self.hf = tokenizer
        n = min(len(tokenizer), vocab_size)
        # Each id decoded alone: a piece is its text as it would print (a byte-level piece that holds part
        # of a UTF-8 character decodes to U+FFFD, so join ids with decode, not pieces, for exact text).
        self.pieces = tokenizer.batch_decode([[i] for i in range(n)], clean_up_tokenization_spaces=False)
        self.pieces += [""] * (vocab_size - n)

    def piece(self, token: int) -> str:
        return self.pieces[token]

    @property
    def vocab_size(self) -> int:
        return len(self.pieces)

    def unknown_chars(self, text: str) -> list[str]:
        return []  # byte-level and SentencePiece tokenizers encode any text

    def encode(self, text: str) -> list[int]:
        return self.hf.encode(text, add_special_tokens=False)

    def decode(self, ids) -> str:
        return self.hf.decode([int(i) for i in ids], clean_up_tokenization_spaces=False)

    def same_as(self, other: "PieceTokenizer") -> bool:
        """Whether two tokenizers map text to the same ids (a draft model must share the target's)."""
        return self.hf.get_vocab() == other.hf.get_vocab() and self.pieces == other.pieces
