"""The generated text as HTML, every character marked by where it came from.

    prompt      grey, no mark
    accepted    a drafted token the target accepted: green, solid underline
    correction  drawn from the residual after a rejection: orange, dashed box
    bonus       drawn from p after a fully accepted draft: blue, double underline
    rejected    the current round's rejected candidates: red, struck through
    unchecked   drafted after a rejection, never looked at: grey, struck through

Colour is never the only cue (each kind has its own line style), and every emitted character
has a tooltip with p, q and its round. Every character goes through html.escape: a prompt
containing markup shows as text.
"""

import html

from specviz.record import RoundRecord, Trace

STYLE = """<style>
.sv-text { font-family: ui-monospace, monospace; white-space: pre-wrap; line-height: 1.9; font-size: 15px; }
.sv-text span { padding: 0 1px; }
.sv-prompt { color: #6B7280; }
.sv-accepted { background: #C7EBDF; text-decoration: underline solid #00664A 2px; }
.sv-correction { background: #FBE6BF; border: 1px dashed #9A6A00; }
.sv-bonus { background: #D5ECFA; text-decoration: underline double #004C77; }
.sv-rejected { background: #F7D6C2; color: #A34800; text-decoration: line-through 2px; }
.sv-unchecked { color: #999999; text-decoration: line-through; }
.sv-now { font-weight: 700; }
.sv-legend span { margin-right: 0.8em; }
</style>"""

LEGEND = (
    '<div class="sv-text sv-legend"><span class="sv-prompt">prompt</span>'
    '<span class="sv-accepted">accepted draft</span><span class="sv-correction">correction (residual)</span>'
    '<span class="sv-bonus">bonus</span><span class="sv-rejected">rejected</span>'
    '<span class="sv-unchecked">never checked</span> <b>bold</b> = this round</div>'
)


def _glyph(ch: str) -> str:
    # A newline gets a visible mark, so an accepted or rejected newline can be seen and hovered.
    return "\u21b5\n" if ch == "\n" else ch


def _span(kind: str, ch: str, title: str, now: bool = False) -> str:
    cls = f"sv-{kind}" + (" sv-now" if now else "")
    return f'<span class="{cls}" title="{html.escape(title)}">{html.escape(_glyph(ch))}</span>'


def round_spans(r: RoundRecord, vocab: str, now: bool) -> list[str]:
    """The round's characters in order; the current round also shows what it threw away."""
    tried = {p.node: p for p in r.positions}
    out = []
    for node, tok in zip(r.accepted_path, r.emitted, strict=False):
        p = tried[node]
        out.append(_span("accepted", vocab[tok], f"round {r.number}: accepted draft, p={p.p_x:.3f} q={p.q_x:.3f}", now))
    if now:
        for p in r.positions:
            if not p.accepted:
                title = f"round {r.number}: rejected, p={p.p_x:.3f} q={p.q_x:.3f} u={p.u}"
                out.append(_span("rejected", vocab[p.token], title, True))
        depth = len(r.accepted_path)
        if r.correction is not None and r.tree_mask is None:  # a chain: the rest of the draft
            for tok in r.draft_tokens[depth + 1 :]:
                out.append(
                    _span("unchecked", vocab[tok], f"round {r.number}: drafted after a rejection, never checked")
                )
    last = r.emitted[-1]
    if r.correction is not None:
        title = f"round {r.number}: correction drawn from the residual, residual(x)={float(r.residual[last]):.3f}"
        out.append(_span("correction", vocab[last], title, now))
    else:
        out.append(_span("bonus", vocab[last], f"round {r.number}: bonus token, p={float(r.bonus_p[last]):.3f}", now))
    return out


def prompt_spans(trace: Trace) -> str:
    return "".join(_span("prompt", trace.vocab[t], "prompt") for t in trace.prompt)


def text_body(trace: Trace, cursor: int) -> str:
    """The prompt and the first ``cursor`` rounds, without the style and legend; round ``cursor``
    is the current one."""
    vocab = trace.vocab
    parts = [prompt_spans(trace)]
    for r in trace.rounds[:cursor]:
        parts += round_spans(r, vocab, now=r.index == cursor - 1)
    return f'<div class="sv-text">{"".join(parts)}</div>'


def text_html(trace: Trace, cursor: int) -> str:
    """The text after ``cursor`` rounds with its style and legend, ready for one HTML block."""
    return f"{STYLE}{LEGEND}{text_body(trace, cursor)}"
