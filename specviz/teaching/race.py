"""The race: the same prompt decoded twice, plainly and speculatively, replayed side by side at
the times the engine measured.

Each lane is one recorded run. A round's tokens appear together when its round ends (draft +
verify + accept, as the engine timed them), so the speculative lane arrives in bursts and the
plain lane one character at a time. The runs are far too quick to watch (a few hundred
milliseconds), so the replay is slowed by one factor for both lanes; the running tokens/s and
the speedup are the measured ones, not the slowed ones.
"""

import statistics
from dataclasses import dataclass, field

from specviz.adaptive.costs import REFERENCE, CostCurve
from specviz.core.engine import Generation
from specviz.core.markup import script_json
from specviz.core.record import Trace
from specviz.core.settings import Settings
from specviz.drafters import BASELINE

REPLAY_SECONDS = 8.0  # how long the plain lane takes on screen


@dataclass
class Lane:
    label: str
    times: list[float]  # seconds from the start at which each emitted token appeared
    pieces: list[str]  # per emitted token, its text (Trace.vocab), in order
    kinds: list[str]  # per token: "plain", "accepted", "correction" or "bonus"
    runs: list[float] = field(default_factory=list)  # seconds of each repeat, in the order run; this lane is the median

    @property
    def chars(self) -> str:
        """The emitted text."""
        return "".join(self.pieces)

    @property
    def seconds(self) -> float:
        return self.times[-1] if self.times else 0.0


def lane(trace: Trace, label: str) -> Lane:
    times, pieces, kinds, t = [], [], [], 0.0
    plain = trace.settings["drafter"] == BASELINE
    for r in trace.rounds:
        t += r.draft_s + r.verify_s + r.accept_s
        for tok, kind in zip(r.emitted, r.emitted_kinds, strict=True):
            times.append(t)
            pieces.append(trace.vocab[tok])
            kinds.append("plain" if plain else kind)
    return Lane(label, times, pieces, kinds)


def _seconds(trace: Trace) -> float:
    return sum(r.draft_s + r.verify_s + r.accept_s for r in trace.rounds)


def race(target, prompt: list[int], settings: Settings, draft_model=None, repeats: int = 3,
         costs: CostCurve = REFERENCE) -> tuple[Lane, Lane]:  # fmt: skip
    """(plain, speculative): ``repeats`` runs of each, interleaved on this machine now; each lane is
    its run of median time. Both use the settings' seed, temperature and length; ``costs`` is the
    speculative run's cost curve (adaptive K: this machine's, specviz.adaptive.costs.measure)."""
    plain_settings = Settings(drafter=BASELINE, temperature=settings.temperature, max_new_tokens=settings.max_new_tokens,
                              seed=settings.seed)  # fmt: skip
    runs = {"plain": [], "spec": []}
    for _ in range(repeats):
        runs["plain"].append(Generation(target, prompt, plain_settings).run())
        runs["spec"].append(Generation(target, prompt, settings, draft_model, costs=costs).run())
    picked, seconds = {}, {}
    for name, traces in runs.items():
        seconds[name] = [_seconds(t) for t in traces]
        middle = statistics.median_low(seconds[name])
        picked[name] = next(t for t in traces if _seconds(t) == middle)
    k = f"K ≤ {settings.k}, adaptive" if settings.k_auto else f"K = {settings.k}"
    plain = lane(picked["plain"], "Plain decoding")
    spec = lane(picked["spec"], f"Speculative: {settings.drafter}, {k}")
    plain.runs, spec.runs = seconds["plain"], seconds["spec"]
    return plain, spec


def spread(plain: Lane, spec: Lane) -> tuple[float, float] | None:
    """The lowest and highest speedup of the race's repeats, each plain run over the speculative run
    made right after it (interleaved: the machine's load reaches both alike); None without repeats."""
    ratios = [a / b for a, b in zip(plain.runs, spec.runs, strict=True) if b > 0]
    return (min(ratios), max(ratios)) if ratios else None


def spread_sentence(plain: Lane, spec: Lane) -> str:
    """The race's run-to-run spread in words, for the caption under it ("" without repeats)."""
    if (lo_hi := spread(plain, spec)) is None:
        return ""
    plain_ms, spec_ms = (", ".join(f"{x * 1000:.0f}" for x in ln.runs) for ln in (plain, spec))
    return (f"Its {len(plain.runs)} runs, measured just now on this machine: plain {plain_ms} ms, speculative "
            f"{spec_ms} ms; run by run, {lo_hi[0]:.2f}× to {lo_hi[1]:.2f}× as fast. That range is the run-to-run "
            "spread here and now.")  # fmt: skip


def race_html(prompt_text: str, plain: Lane, spec: Lane) -> str:
    """A self-contained block (for an iframe): both lanes replayed, slowed so the plain lane lasts
    REPLAY_SECONDS, with a Race again button. Text is set through textContent only."""
    slow = REPLAY_SECONDS / max(plain.seconds, 1e-9)
    same = "the same characters" if plain.chars == spec.chars else "different draws from the same distribution"
    lo_hi = spread(plain, spec)
    span = f" (its {len(plain.runs)} runs: {lo_hi[0]:.2f}× to {lo_hi[1]:.2f}×)" if lo_hi else ""
    data = {"prompt": prompt_text, "slow": slow, "lanes": [vars(plain), vars(spec)], "same": same, "span": span}
    return PAGE.replace("__DATA__", script_json(data))


PAGE = """<style>
body { margin: 0; font-family: system-ui, sans-serif; }
.race { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }  /* side by side, even on a projector */
.lane { border: 1px solid #D1D5DB; border-radius: 8px; padding: 8px 10px; }
.lane h3 { margin: 0 0 4px 0; font-size: 17px; }
.stats { font-size: 15px; color: #374151; min-height: 1.4em; font-variant-numeric: tabular-nums; }
.text { font-family: ui-monospace, monospace; font-size: 16px; white-space: pre-wrap; line-height: 1.6;
        height: 180px; overflow-y: auto; }
.prompt { color: #6B7280; }
.accepted { background: #C7EBDF; text-decoration: underline solid #00664A 2px; }
.correction { background: #FBE6BF; }
.bonus { background: #D5ECFA; text-decoration: underline double #004C77; }
.bar { display: flex; gap: 12px; align-items: center; margin-bottom: 8px; font-size: 15px; min-height: 2.6em; }
button { font-size: 15px; padding: 6px 14px; white-space: nowrap; }
button:focus-visible { outline: 3px solid #0072B2; outline-offset: 2px; }
</style>
<!-- the result line above the lanes: under them it fell below a 1024x768 screen's edge -->
<div class="bar"><button id="go">Race again</button><span id="note" aria-live="polite"></span></div>
<div class="race">
  <div class="lane"><h3 id="h0"></h3><div class="stats" id="s0"></div><div class="text" id="t0"></div></div>
  <div class="lane"><h3 id="h1"></h3><div class="stats" id="s1"></div><div class="text" id="t1"></div></div>
</div>
<script>
const D = __DATA__;
let start = null, shown = [0, 0];
function reset() {
  for (let i = 0; i < 2; i++) {
    const t = document.getElementById("t" + i);
    t.replaceChildren();
    const p = document.createElement("span");
    p.className = "prompt";
    p.textContent = D.prompt;
    t.appendChild(p);
    document.getElementById("h" + i).textContent = D.lanes[i].label;
    shown[i] = 0;
  }
  document.getElementById("note").textContent = "Slow motion: " + Math.round(D.slow) + "x slower than it ran.";
}
function frame(now) {
  if (start === null) start = now;
  const elapsed = (now - start) / 1000 / D.slow;  // seconds of the measured runs
  let running = false;
  for (let i = 0; i < 2; i++) {
    const L = D.lanes[i], t = document.getElementById("t" + i);
    while (shown[i] < L.times.length && L.times[shown[i]] <= elapsed) {
      const s = document.createElement("span");
      s.className = L.kinds[shown[i]];
      s.textContent = L.pieces[shown[i]];  // one token's text
      t.appendChild(s);
      shown[i]++;
    }
    t.scrollTop = t.scrollHeight;
    const at = Math.min(elapsed, L.times[L.times.length - 1]);
    const rate = shown[i] / Math.max(at, 1e-9);
    document.getElementById("s" + i).textContent = shown[i] + " tokens in " + (at * 1000).toFixed(0) + " ms: "
      + rate.toFixed(0) + " tokens/s" + (shown[i] === L.times.length ? " (done)" : "");
    if (shown[i] < L.times.length) running = true;
  }
  if (running) requestAnimationFrame(frame);
  else {
    const a = D.lanes[0].times.at(-1), b = D.lanes[1].times.at(-1);
    document.getElementById("note").textContent = "Measured: plain " + (a * 1000).toFixed(0) + " ms, speculative "
      + (b * 1000).toFixed(0) + " ms: " + (a / b).toFixed(2) + "× as fast" + D.span + ", and " + D.same + ".";
  }
}
function go() { reset(); start = null; requestAnimationFrame(frame); }
document.getElementById("go").onclick = go;
go();
</script>
"""
