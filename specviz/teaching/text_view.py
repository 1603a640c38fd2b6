"""The generated text as HTML, every character marked by where it came from.

    prompt      grey, no mark
    accepted    a drafted token the target accepted: green, solid underline
    correction  drawn from the residual after a rejection: orange, dashed box
    bonus       drawn from p after a fully accepted draft: blue, double underline
    rejected    the current round's rejected candidates: red, struck through
    unchecked   drafted after a rejection, never looked at: grey, struck through
    pending     phase by phase (specviz/teaching/phases.py): drafted, not yet checked: dotted underline
    focus       phase by phase: what the current phase is about: a blue outline

Colour is never the only cue (each kind has its own line style), and every emitted character
has a tooltip with p, q and its round. Every character goes through html.escape: a prompt
containing markup shows as text.
"""

import html

from models.tokenizer import marked
from specviz.core.record import RoundRecord, Trace, word_pieces
from specviz.teaching.phases import Phase

STYLE = """<style>
.sv-text { font-family: ui-monospace, monospace; white-space: pre-wrap; line-height: 1.9; font-size: 15px; }
.sv-text span { padding: 0 1px; }
.sv-prompt { color: #6B7280; }
.sv-accepted { background: #C7EBDF; text-decoration: underline solid #00664A 2px; }
.sv-correction { background: #FBE6BF; border: 1px dashed #9A6A00; }
.sv-bonus { background: #D5ECFA; text-decoration: underline double #004C77; }
.sv-rejected { background: #F7D6C2; color: #A34800; text-decoration: line-through 2px; }
.sv-unchecked { color: #999999; text-decoration: line-through; }
.sv-pending { text-decoration: underline dotted #6B7280 2px; }
.sv-focus { outline: 3px solid #0072B2; outline-offset: 1px; }
.sv-now { font-weight: 700; }
.sv-piece { box-shadow: inset -1px 0 0 #999999; }  /* word pieces: a hairline where each token ends */
.sv-legend { font-size: 13px; }
.sv-legend span { margin-right: 0.8em; display: inline-block; white-space: nowrap; }  /* items wrap whole */
</style>"""

LEGEND = (
    '<div class="sv-text sv-legend"><span class="sv-prompt">prompt</span>'
    '<span class="sv-accepted">accepted draft</span><span class="sv-correction">correction (residual)</span>'
    '<span class="sv-bonus">bonus</span><span class="sv-rejected">rejected</span>'
    '<span class="sv-unchecked">never checked</span> <b>bold</b> = this round</div>'
)

PHASE_LEGEND = '<span class="sv-pending">not yet checked</span><span class="sv-focus">this phase</span>'


def _glyph(piece: str) -> str:
    # A newline gets a visible mark, so an accepted or rejected newline can be seen and hovered.
    return piece.replace("\n", "\u21b5\n")


def _span(kind: str, vocab: list[str], token: int, title: str, now: bool = False, focus: bool = False) -> str:
    """One token's piece of text (one character, or several), marked as ``kind``. Word pieces show where
    each token starts and ends: a hairline between tokens, their spaces and newlines as visible markers
    (models/tokenizer.py ``marked``), and the id in the hover."""
    cls = f"sv-{kind}" + (" sv-now" if now else "") + (" sv-focus" if focus else "")
    piece = vocab[token]
    if word_pieces(vocab):
        return (f'<span class="{cls} sv-piece" title="{html.escape(f"{title} · id {token}")}">'
                f"{html.escape(marked(piece))}</span>")  # fmt: skip
    return f'<span class="{cls}" title="{html.escape(title)}">{html.escape(_glyph(piece))}</span>'


def round_spans(r: RoundRecord, vocab: list[str], now: bool) -> list[str]:
    """The round's characters in order; the current round also shows what it threw away."""
    tried = {p.node: p for p in r.positions}
    out = []
    for node, tok in zip(r.accepted_path, r.emitted, strict=False):
        p = tried[node]
        out.append(_span("accepted", vocab, tok, f"round {r.number}: accepted draft, p={p.p_x:.3f} q={p.q_x:.3f}", now))
    if now:
        for p in r.positions:
            if not p.accepted:
                title = f"round {r.number}: rejected, p={p.p_x:.3f} q={p.q_x:.3f} u={p.u}"
                out.append(_span("rejected", vocab, p.token, title, True))
        depth = len(r.accepted_path)
        if r.correction is not None and r.tree_mask is None:  # a chain: the rest of the draft
            for tok in r.draft_tokens[depth + 1 :]:
                out.append(
                    _span("unchecked", vocab, tok, f"round {r.number}: drafted after a rejection, never checked")
                )
    last = r.emitted[-1]
    if r.correction is not None:
        title = f"round {r.number}: correction drawn from the residual, residual(x)={float(r.residual[last]):.3f}"
        out.append(_span("correction", vocab, last, title, now))
    else:
        out.append(_span("bonus", vocab, last, f"round {r.number}: bonus token, p={float(r.bonus_p[last]):.3f}", now))
    return out


def phase_spans(r: RoundRecord, vocab: list[str], phase: Phase) -> list[str]:
    """The current round as it stands at ``phase``: the checks made so far resolved, the one the
    phase is about outlined, a chain's candidates not yet checked pending; the full round at trim."""
    if phase.stage == "trim":
        return round_spans(r, vocab, now=True)
    done = {"draft": 0, "verify": 0, "check": (phase.check or 0) + 1}.get(phase.stage, len(r.positions))
    out = []
    for i, p in enumerate(r.positions[:done]):
        kind = "accepted" if p.accepted else "rejected"
        title = f"round {r.number}: {kind}, p={p.p_x:.3f} q={p.q_x:.3f} u={p.u}"
        out.append(_span(kind, vocab, p.token, title, True, focus=phase.stage == "check" and i == phase.check))
    if r.tree_mask is None:  # a chain: the candidates after the checks so far
        rejected = any(not p.accepted for p in r.positions[:done])
        for tok in r.draft_tokens[done:]:
            kind = "unchecked" if rejected else "pending"
            out.append(
                _span(kind, vocab, tok, f"round {r.number}: drafted, {'never' if rejected else 'not yet'} checked")
            )
    if phase.stage in ("residual", "bonus"):
        last = r.emitted[-1]
        out.append(_span(phase.stage if phase.stage == "bonus" else "correction", vocab, last,
                         f"round {r.number}: {phase.stage}", True, focus=True))  # fmt: skip
    return out


def prompt_spans(trace: Trace) -> str:
    return "".join(_span("prompt", trace.vocab, t, "prompt") for t in trace.prompt)


def text_body(trace: Trace, cursor: int, phase: Phase | None = None) -> str:
    """The prompt and the first ``cursor`` rounds, without the style and legend; round ``cursor``
    is the current one, drawn as it stands at ``phase`` when one is given."""
    vocab = trace.vocab
    parts = [prompt_spans(trace)]
    for r in trace.rounds[:cursor]:
        now = r.index == cursor - 1
        parts += phase_spans(r, vocab, phase) if now and phase is not None else round_spans(r, vocab, now=now)
    return f'<div class="sv-text">{"".join(parts)}</div>'


def text_html(trace: Trace, cursor: int, phase: Phase | None = None) -> str:
    """The text after ``cursor`` rounds with its style and legend, ready for one HTML block."""
    legend = LEGEND if phase is None else LEGEND.replace("</div>", PHASE_LEGEND + "</div>")
    return f"{STYLE}{legend}{text_body(trace, cursor, phase)}"
