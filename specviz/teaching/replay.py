"""A recorded run as one self-contained HTML file: the text, each round's charts and the step
controls, with plotly inlined. It needs no server and makes no network request, so a teacher can
mail it to students or open it from disk on a projector without Python.

The file holds, per round, the round's characters twice (settled, and as the current round with
its rejected candidates), its candidate table (the step page's columns), the running totals up to
it, and the round's figures as plotly JSON; a few lines of JavaScript put
the text together for the chosen round and hand the figures to Plotly.react. Everything the user
or the model wrote is HTML-escaped (specviz.teaching.text_view) or set through textContent, and the JSON is
embedded with <, > and & escaped, so no text can close the script element.
"""

import html
import json
import math

from plotly.offline import get_plotlyjs

from specviz.charts.distributions import bonus_bars, candidate_frame, pq_bars, residual_bars
from specviz.charts.kv import kv_ledger
from specviz.core.markup import script_json
from specviz.core.record import RoundRecord, Trace
from specviz.teaching.stats import running_totals
from specviz.teaching.text_view import LEGEND, STYLE, prompt_spans, round_spans

MAX_POSITIONS = 4  # p/q charts per round: the first verified positions (a tree may verify dozens)


def _glyphs(tokens: list[int], vocab: list[str]) -> str:
    return "".join(vocab[t] for t in tokens).replace("\n", "\u21b5")


def round_heading(r: RoundRecord, vocab: list[str], rounds: int) -> str:
    """One line per round, round 1 first. Plain text (the page sets it through textContent)."""
    kept = f"kept {len(r.accepted_path)} of {len(r.draft_tokens)} drafted"
    last = "correction" if r.correction is not None else "bonus"
    return f"Round {r.number} of {rounds}: {kept}, then a {last}; emitted {_glyphs(r.emitted, vocab)!r}"


def round_figures(r: RoundRecord, vocab: list[str]) -> list[dict]:
    figs = [pq_bars(p, vocab) for p in r.positions[:MAX_POSITIONS]]
    figs.append(residual_bars(r, vocab) if r.correction is not None else bonus_bars(r, vocab))
    figs.append(kv_ledger(r))
    return [json.loads(f.to_json()) for f in figs]


def candidate_table(r: RoundRecord, vocab: list[str]) -> str:
    """The round's candidate table, the step page's columns (candidate_frame), as escaped HTML."""
    frame = candidate_frame(r, vocab)
    if frame.empty:
        return "<p>Nothing drafted this round: the target emitted one character on its own.</p>"

    def cell(v):  # no draw (u at temperature 0) shows as –, never as None
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "–"
        return f"{v:.3f}" if isinstance(v, float) else v

    return frame.astype(object).map(cell).to_html(index=False, escape=True, border=0, classes="candidates")


def totals_line(rounds: list[RoundRecord], k: int) -> str:
    """The step page's running totals over ``rounds`` as one plain-text line (set through textContent)."""
    t = running_totals(rounds, k)
    return (f"So far: {t['rounds']} rounds, {t['tokens']} characters, {t['tokens_per_forward']:.2f} characters per "
            f"target forward pass; acceptance rate α = {t['acceptance_rate']:.1%} ({t['accepted']} of {t['tried']} "
            f"checked drafts accepted); expected per round {t['expected_per_round']:.2f}; {t['reprefills']} "
            "context-window re-prefills (the window moved and the KV cache, the target's stored keys and values, "
            "was rebuilt).")  # fmt: skip


def replay_html(trace: Trace, title: str = "specviz replay", progress=None) -> str:
    """The whole file. ``progress(done, total)`` is called after each round's figures."""
    vocab, n = trace.vocab, len(trace.rounds)
    s = trace.settings
    rounds = []
    for i, r in enumerate(trace.rounds):
        rounds.append({
            "settled": "".join(round_spans(r, vocab, now=False)),
            "current": "".join(round_spans(r, vocab, now=True)),
            "heading": round_heading(r, vocab, n),
            "figures": round_figures(r, vocab),
            "table": candidate_table(r, vocab),
            "totals": totals_line(trace.rounds[: i + 1], s["k"]),
        })  # fmt: skip
        if progress:
            progress(i + 1, n)
    summary = trace.summary()
    data = {
        "prompt": prompt_spans(trace),
        "totals": totals_line([], s["k"]),
        "rounds": rounds,
        "settings": (f"drafter {s['drafter']}, K {s['k']}{' (adaptive)' if s.get('k_auto') else ''}, "
                     f"temperature {s['temperature']}, seed {s['seed']}, verification {s['verification']}: "
                     f"{summary['tokens']} tokens in {summary['target_forwards']} target forward passes "
                     f"({summary['mean_accepted']:.2f} per pass)"),
    }  # fmt: skip
    return PAGE.format(
        title=html.escape(title),
        style=STYLE,
        legend=LEGEND,
        plotly=get_plotlyjs(),
        data=script_json(data),
        script=SCRIPT,
    )


SCRIPT = """
const D = DATA, n = D.rounds.length;
const slider = document.getElementById("slider");
slider.max = n;
let cursor = 0;
function show(c) {
  cursor = Math.max(0, Math.min(n, c));
  slider.value = cursor;
  document.getElementById("pos").textContent = cursor + " / " + n;
  let text = D.prompt;
  for (let i = 0; i < cursor - 1; i++) text += D.rounds[i].settled;
  if (cursor > 0) text += D.rounds[cursor - 1].current;
  document.getElementById("text").innerHTML = text;  // built from escaped spans only
  const r = cursor > 0 ? D.rounds[cursor - 1] : null;
  document.getElementById("heading").textContent = r ? r.heading : "Only the prompt so far: press Next.";
  document.getElementById("table").innerHTML = r ? r.table : "";  // escaped by pandas (escape=True)
  document.getElementById("totals").textContent = r ? r.totals : D.totals;
  const charts = document.getElementById("charts");
  charts.replaceChildren();
  for (const fig of (r ? r.figures : [])) {
    const div = document.createElement("div");
    div.className = "chart";
    charts.appendChild(div);
    Plotly.newPlot(div, fig.data, fig.layout, {displaylogo: false, responsive: true});
  }
}
document.getElementById("first").onclick = () => show(0);
document.getElementById("prev").onclick = () => show(cursor - 1);
document.getElementById("next").onclick = () => show(cursor + 1);
document.getElementById("last").onclick = () => show(n);
slider.oninput = () => show(Number(slider.value));
document.addEventListener("keydown", (e) => {
  if (e.target === slider) return;  // the slider has its own arrow keys
  const moves = {ArrowRight: cursor + 1, ArrowLeft: cursor - 1, Home: 0, End: n};
  if (e.key in moves) { show(moves[e.key]); e.preventDefault(); }
});
document.getElementById("settings").textContent = D.settings;
show(0);
"""

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
{style}
<style>
body {{ font-family: system-ui, sans-serif; margin: 1.5rem; max-width: 1100px; }}
nav {{ display: flex; gap: 0.5rem; align-items: center; flex-wrap: wrap; margin: 0.8rem 0; }}
nav button {{ font-size: 1rem; padding: 0.4rem 0.9rem; }}
nav button:focus-visible, nav input:focus-visible {{ outline: 3px solid #0072B2; outline-offset: 2px; }}
#slider {{ flex: 1; min-width: 10rem; }}
#charts {{ display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr)); gap: 0.5rem; }}
.chart {{ height: 320px; }}
table.candidates {{ border-collapse: collapse; margin: 0.5rem 0; }}
table.candidates th, table.candidates td {{ padding: 0.2rem 0.7rem; text-align: right; border-bottom: 1px solid #ddd; }}
</style>
<script>{plotly}</script>
</head><body>
<h1>{title}</h1>
<p id="settings"></p>
<nav aria-label="Rounds">
<button id="first">&laquo; First</button><button id="prev">&#x25C0; Previous</button>
<button id="next">Next &#x25B6;</button><button id="last">Last &raquo;</button>
<input type="range" id="slider" min="0" value="0" aria-label="Round"><span id="pos" aria-live="polite"></span>
</nav>
<h2 id="heading" aria-live="polite"></h2>
{legend}
<div id="text" class="sv-text"></div>
<p id="totals"></p>
<div id="table"></div>
<div id="charts"></div>
<script>const DATA = {data};
{script}</script>
</body></html>
"""
