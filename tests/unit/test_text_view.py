"""The generated text: every character marked by origin, hover text, and markup shown as text."""

import html
import re

import pytest

from specviz.core.session import Session
from specviz.core.settings import Settings
from specviz.teaching.text_view import text_html


def spans(markup: str) -> list[tuple[str, str, str]]:
    """(classes, title, text) of every character span after the legend."""
    body = markup.split('<div class="sv-text">', 1)[1]
    return [(c, html.unescape(t), html.unescape(x)) for c, t, x in
            re.findall(r'<span class="([^"]+)" title="([^"]*)">(.*?)</span>', body, re.S)]  # fmt: skip


def test_markup_in_the_prompt_is_escaped(target):
    prompt = "<b>x</b> & 'y'"
    with pytest.raises(ValueError):  # '<' is not in the vocabulary: the engine never sees it
        target.tokenizer.encode(prompt)
    # Built by hand so the escaping is tested on its own, with characters the vocabulary lacks.
    from specviz.core.record import Trace

    vocab = "".join(sorted(set(prompt)))
    trace = Trace({}, vocab, [vocab.index(c) for c in prompt])
    markup = text_html(trace, 0)
    assert "<b>" not in markup.split('<div class="sv-text">', 1)[1]
    assert "".join(t for _, _, t in spans(markup)) == prompt


def test_every_character_is_marked_by_origin(target):
    s = Session(target, target.tokenizer.encode("ROMEO:\n"), Settings(drafter="trigram", k=4, temperature=0.8))
    for _ in range(12):
        s.forward()
    rejecting = [r for r in s.rounds if r.correction is not None and r.tree_mask is None and r.n_accepted < 3]
    assert rejecting, "the run should hold a round that rejected a draft"
    s.seek(rejecting[-1].index + 1)  # make it the current round
    trace, cur = s.generation.trace, s.current
    marked = spans(text_html(trace, s.cursor))
    kinds = [c.split()[0].removeprefix("sv-") for c, _, _ in marked]
    prompt, rest = kinds[: len(trace.prompt)], kinds[len(trace.prompt) :]
    assert prompt == ["prompt"] * len(trace.prompt)
    emitted_kinds = [k for r in s.rounds[: s.cursor] for k in r.emitted_kinds]
    assert [k for k in rest if k in ("accepted", "correction", "bonus")] == emitted_kinds
    # The shown characters, minus the current round's discarded candidates, are the text.
    shown = "".join(t for c, _, t in marked if "rejected" not in c and "unchecked" not in c)
    text = trace.prompt + [t for r in s.rounds[: s.cursor] for t in r.emitted]
    assert shown.replace("\u21b5", "") == target.tokenizer.decode(text)
    unchecked = [t for c, _, t in marked if "unchecked" in c]
    assert "".join(unchecked) == target.tokenizer.decode(cur.draft_tokens[cur.n_accepted + 1 :]).replace(
        "\n", "\u21b5\n"
    )
    # Rejected candidates appear for the current round only; each carries p, q and the round.
    rejected = [(c, t) for c, t, _ in marked if "rejected" in c]
    assert len(rejected) == sum(not p.accepted for p in cur.positions)
    assert all(f"round {cur.number}" in t for _, t in rejected)
    for c, t, _ in marked:
        if "accepted" in c:
            assert re.search(r"round \d+: accepted draft, p=[\d.]+ q=[\d.]+", t)
