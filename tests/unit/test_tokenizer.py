import pytest

from models.tokenizer import CharTokenizer, UnknownCharactersError


def test_round_trip():
    tok = CharTokenizer.from_text("hello, world\n")
    text = "lower hello\n"
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    assert tok.vocab_size == len(set("hello, world\n"))
    assert tok.chars == "".join(sorted(set("hello, world\n")))


def test_unknown_characters_are_named():
    tok = CharTokenizer.from_text("abc ")
    with pytest.raises(UnknownCharactersError) as e:
        tok.encode("a café <b>")
    assert e.value.chars == ["f", "é", "<", ">"]
    assert "'é' (U+00E9)" in str(e.value) and "'<'" in str(e.value)
