"""The guided lesson's content: one real round told in short steps, and a glossary of every
metric the app shows, each by its formula and the raw counts of the lesson's run.

Pure data over round records (no Streamlit): a Step names the parts of the charts it shows and
carries its text; the page draws only those parts. Texts never give away a verdict before the
step that reveals it, so the page's "predict, then reveal" mode can ask first.
"""

import statistics
import time
from dataclasses import dataclass, replace

from specviz.adaptive.costs import REFERENCE, CostCurve, cpu_name
from specviz.charts.distributions import label
from specviz.core.engine import Generation
from specviz.core.record import PositionRecord, RoundRecord, word_pieces
from specviz.core.settings import Settings
from specviz.drafters import BASELINE, REGISTRY
from specviz.teaching.stats import DEFINITIONS, acceptance_by_position, running_totals

# A run whose round 0 accepts two drafts and then rejects one, and whose round 1 accepts all
# four: every part of the algorithm shows up in two rounds (tests/app/test_teaching_pages.py pins this).
EXAMPLE = Settings(drafter="trigram", k=4, temperature=0.8, seed=33, max_new_tokens=60)
EXAMPLE_PRESET = "Free verse"
MAX_ROUNDS = 12  # a lesson runs until it has both kinds of round (see enough), at most this many

PARTS = ("text_before", "draft", "verify", "check", "last", "kv", "text_after", "bonus_round", "totals")


@dataclass
class Step:
    title: str
    text: str  # markdown: characters are in code spans, so no character is read as markup
    parts: tuple[str, ...]  # what the page draws, from PARTS
    round: int  # index of the round record the parts are drawn for
    position: int | None = None  # "check": index into the round's positions
    outcome: str = ""  # "check": the verdict, shown only once revealed


def c(vocab: list[str], token: int) -> str:
    """A character as markdown code: spaces and newlines visible, '$' and '*' inert."""
    return f"`{label(vocab, token)}`"


def pick_rounds(rounds: list[RoundRecord]) -> tuple[RoundRecord | None, RoundRecord | None]:
    """(main, bonus): the first round that accepts some drafts and then rejects one (else the first
    with any rejection), and the first round whose drafts were all accepted. Only rounds with
    drafts count; either may be None."""
    drafted = [r for r in rounds if r.draft_tokens]
    rejected = [r for r in drafted if r.correction is not None]
    main = next((r for r in rejected if r.n_accepted), rejected[0] if rejected else None)
    bonus = next((r for r in drafted if r.bonus is not None), None)
    return main, bonus


def enough(rounds: list[RoundRecord]) -> bool:
    """True once the rounds hold a rejection after some acceptances and a fully accepted round."""
    main, bonus = pick_rounds(rounds)
    return main is not None and main.n_accepted > 0 and bonus is not None


def check_texts(
    pos: PositionRecord, vocab: list[str], temperature: float, after_sibling: bool = False
) -> tuple[str, str]:
    """(question, outcome) for one drafted character tried against the target."""
    x = c(vocab, pos.token)
    sibling = " (tried after a rejected sibling in the tree, so p is the residual it left)" if after_sibling else ""
    if pos.sampled is not None:  # NASD's own rule
        ask = (f"Draft {x} at depth {pos.depth}: the target gives it p(x) = {pos.p_x:.3f}. NASD's own rule samples "
               f"s ~ p and accepts only if s is the draft.")  # fmt: skip
        verdict = "accepted" if pos.accepted else "rejected"
        return ask, f"The target sampled s = {c(vocab, pos.sampled)}, so {x} is **{verdict}**."
    ask = (f"Draft {x} at depth {pos.depth}{sibling}: the drafter's probability q(x) = {pos.q_x:.3f}, the "
           f"target's probability p(x) = {pos.p_x:.3f}. It is accepted with probability min(1, p(x)/q(x)) = {pos.accept_prob:.3f}.")  # fmt: skip
    if temperature == 0 or pos.u is None:
        why = "At temperature 0 p is one-hot: only the target's own argmax is accepted, and no coin is tossed"
    elif pos.accept_prob >= 1:
        why = f"p(x) ≥ q(x): the target wants it at least as much as the drafter, whatever the draw (u = {pos.u:.3f})"
    else:
        op = "<" if pos.accepted else "≥"
        why = f"A uniform draw u = {pos.u:.3f} {op} {pos.accept_prob:.3f}"
    return ask, f"{why}, so {x} is **{'accepted' if pos.accepted else 'rejected'}**."


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.2f} ms (median of {len(values)}, {min(values) * 1000:.2f}–" \
           f"{max(values) * 1000:.2f} ms)"  # fmt: skip


def pass_time(r: RoundRecord, timing: dict | None = None) -> str:
    """How long round ``r``'s verify pass took, the prefill told apart: round 1's pass also reads the
    prompt (the cache holds nothing yet), and a pass after the window moved re-reads the window, so its
    time is not what checking the drafts costs. ``timing`` (measure_speedup's) gives the passes that
    prefilled nothing: the drafter's and plain decoding's, timed back to back."""
    if not r.prefilled:
        took = f"That pass took {r.verify_s * 1000:.2f} ms."
    else:
        why = "the prompt (the cache held nothing yet)" if r.index == 0 else "the window (it had moved: a re-prefill)"
        took = (f"The target took {r.verify_s * 1000:.2f} ms this round, but it also read {r.prefilled} characters "
                f"of {why}: a prefill, which plain decoding pays too.")  # fmt: skip
    if not timing or not timing.get("verify_passes") or not timing.get("plain_passes"):
        return took
    n = len(r.draft_tokens) + 1
    one = statistics.median(timing["plain_passes"]) * 1000
    return (f"{took} Without a prefill, a pass over the root and the drafts took {_ms(timing['verify_passes'])}, "
            f"and plain decoding's one-position pass {_ms(timing['plain_passes'])}, on this machine just now: "
            f"far less than {n} separate passes ({n} × {one:.2f} = {n * one:.2f} ms).")  # fmt: skip


def steps(rounds: list[RoundRecord], vocab: list[str], settings: Settings, timing: dict | None = None
          ) -> list[Step]:  # fmt: skip
    main, bonus = pick_rounds(rounds)
    if main is None and bonus is None:
        return []
    r = main or bonus
    drafts = " ".join(c(vocab, t) for t in r.draft_tokens)
    K, n_acc = len(r.draft_tokens), r.n_accepted
    tree = (
        " The drafts form a tree here: a tree attention mask lets each see only its ancestors." if r.tree_mask else ""
    )
    out = [
        Step(
            "The setup",
            f"{'A language model over word pieces' if word_pieces(vocab) else 'A character-level GPT'}, the "
            "**target**, continues the prompt below. Plain decoding costs "
            f"one target forward pass per character. Speculative decoding lets a cheap **drafter** ({settings.drafter}) "
            f"guess up to K = {settings.k} characters and has the target check them all in one pass. We follow round "
            f"{r.number} of a real run at temperature {settings.temperature}: the text so far is below.",
            ("text_before",),
            r.index,
        ),  # fmt: skip
        Step(
            "1. Draft",
            f"The drafter proposes {K} characters, one after another, each drawn from its own "
            f"distribution q given the text and the drafts before it: {drafts}. Drafting is cheap: "
            f"{r.draft_s * 1000:.1f} ms here.",
            ("draft",),
            r.index,
        ),  # fmt: skip
        Step(
            "2. Verify: one target forward pass",
            f"The target reads the last character of the text (the root) and "
            f"the {K} drafts, {K + 1} positions, in ONE forward pass, reusing its KV cache for everything before. "
            f"Causal attention means position i sees only what comes before it, so the pass returns the target's "
            f"distribution p after the root (to judge draft 1), after draft 1 (to judge draft 2), and so on, plus one "
            f"after the last draft.{tree} {pass_time(r, timing)}",
            ("verify",),
            r.index,
        ),  # fmt: skip
    ]
    for i, pos in enumerate(r.positions):
        after_sibling = i > 0 and r.positions[i - 1].depth == pos.depth
        ask, outcome = check_texts(pos, vocab, settings.temperature, after_sibling)
        out.append(Step(f"3.{i + 1} Check draft {i + 1}: {c(vocab, pos.token)}", ask, ("check",), r.index, i, outcome))
    if r.correction is not None:
        dropped = " ".join(c(vocab, t) for t in r.draft_tokens[n_acc + 1 :]) or "none"
        how = ("NASD's own rule draws it afresh from p, which over-produces the rejected draft's neighbours: biased."
               if settings.verification == "nasd-seed" else
               "It is drawn from the residual norm(max(0, p − q)): the part of p that the draft under-proposed. "
               "Accepted drafts contribute min(p, q) and the residual the rest, so the character comes out with "
               "probability exactly p: the output is the target's, whatever the drafter.")  # fmt: skip
        out.append(Step("4. The round's last character", f"A rejection ends the round: the drafts after it ({dropped}) "
                        f"are thrown away unchecked, because they were drafted after a character that will not be in "
                        f"the text. The target still owes one character at that position. {how} Drawn: "
                        f"{c(vocab, r.correction)}.", ("last",), r.index))  # fmt: skip
    else:
        out.append(Step("4. The round's last character", f"Every draft was accepted, so the pass's last distribution, p "
                        f"after the final draft, is free: a bonus character {c(vocab, r.bonus)} is drawn from it.",
                        ("last",), r.index))  # fmt: skip
    out += [
        Step(
            "5. Trim the KV cache",
            f"Verification wrote {r.kv_after_verify - r.kv_before} cache entries: the root "
            f"and {K} drafts. Only the root and the {n_acc} accepted drafts describe the real text, so the cache "
            f"keeps those and drops the rest: {r.kv_before} → {r.kv_after_verify} → {r.kv_after_trim} entries. The "
            f"last character emitted is not cached yet: it is the next round's root.",
            ("kv",),
            r.index,
        ),  # fmt: skip
        Step(
            "6. What the round produced",
            f"{len(r.emitted)} characters from one target forward pass: {n_acc} "
            f"accepted drafts plus one {r.emitted_kinds[-1]}. Plain decoding needs {len(r.emitted)} passes for them.",
            ("text_after",),
            r.index,
        ),  # fmt: skip
    ]
    if bonus is not None and bonus is not r:
        out.append(Step("7. A round where every draft is accepted", f"In round {bonus.number} all "
                        f"{len(bonus.draft_tokens)} drafts were accepted. The pass also computed p after the last "
                        f"draft, so one more character, the bonus {c(vocab, bonus.bonus)}, is drawn from it at no cost: "
                        f"{len(bonus.emitted)} characters for one pass, the most a round can give.",
                        ("bonus_round",), bonus.index))  # fmt: skip
    out.append(Step("8. The numbers the app shows", f"Every figure the app reports is a ratio of counts. Here they are "
                    f"for the {len(rounds)} rounds of this lesson's run, counts you can check against the steps "
                    "before.", ("totals",), r.index))  # fmt: skip
    return out


def measure_speedup(target, draft_model, prompt: list[int], settings: Settings, rounds: int,
                    repeats: int = 3, costs: CostCurve = REFERENCE) -> dict:  # fmt: skip
    """Time the lesson's run (its first ``rounds`` rounds) against plain decoding of the same
    number of characters, back to back, ``repeats`` times: medians, in seconds. ``costs``: the
    run's cost curve (adaptive K)."""
    spec, plain, verify_passes, plain_passes = [], [], [], []
    for _ in range(repeats):
        gen = Generation(target, prompt, settings, draft_model, costs=costs)
        t0 = time.perf_counter()
        for _ in range(rounds):
            gen.step()
        spec.append(time.perf_counter() - t0)
        base = Generation(
            target, prompt, replace(settings, drafter=BASELINE, k_auto=False, max_new_tokens=gen.generated)
        )
        t0 = time.perf_counter()
        base.run()
        plain.append(time.perf_counter() - t0)
        # one verify pass, without a prefill: the drafter's (root and drafts) and plain decoding's (one position)
        verify_passes += [r.verify_s for r in gen.trace.rounds if r.draft_tokens and not r.prefilled]
        plain_passes += [r.verify_s for r in base.trace.rounds if not r.prefilled]
    spec_s, plain_s = statistics.median(spec), statistics.median(plain)
    return {"speculative_s": spec_s, "plain_s": plain_s, "speedup": plain_s / spec_s, "repeats": repeats,
            "spread": (min(p / s for p, s in zip(plain, spec, strict=True)),
                       max(p / s for p, s in zip(plain, spec, strict=True))), "verify_passes": verify_passes,
            "plain_passes": plain_passes}  # fmt: skip


def glossary(rounds: list[RoundRecord], k: int, timing: dict | None = None) -> list[dict]:
    """Every metric the app shows: name, formula, the raw counts of ``rounds``, and the value.
    ``timing`` is measure_speedup's result for these rounds (None: not measured)."""
    t = running_totals(rounds, k)
    n, tokens, tried, accepted, alpha = t["rounds"], t["tokens"], t["tried"], t["accepted"], t["acceptance_rate"]
    lengths = [r.n_accepted for r in rounds]
    depth = acceptance_by_position(rounds)
    if timing:
        speed_counts = (f"{tokens} characters: plain decoding {timing['plain_s'] * 1000:.1f} ms, speculative "
                        f"{timing['speculative_s'] * 1000:.1f} ms (medians of {timing['repeats']} runs, back to back)")  # fmt: skip
        lo, hi = timing.get("spread", (timing["speedup"],) * 2)
        speed_value = (f"{timing['speedup']:.2f}× (measured just now on this machine: {cpu_name()}, median of "
                       f"{timing['repeats']} runs; {lo:.2f}–{hi:.2f}× from run to run)")  # fmt: skip
    else:
        speed_counts, speed_value = f"{tokens} characters", "– (not measured)"
    return [
        {"metric": "Accepted length", "formula": "drafted characters accepted in a round (0..K)",
         "counts": "per round: " + ", ".join(map(str, lengths)), "value": f"mean {sum(lengths) / n:.2f}" if n else "–",
         "definition": DEFINITIONS["accepted_length"]},
        {"metric": "Acceptance rate α", "formula": "accepted / tried drafted characters",
         "counts": f"{accepted} / {tried}", "value": f"{alpha:.3f}", "definition": DEFINITIONS["acceptance_rate"]},
        {"metric": "Acceptance rate per position", "formula": "at depth d: accepted / tried (depth d is tried only "
         "when 1..d−1 were accepted)", "counts": "; ".join(f"depth {d['depth']}: {d['accepted']}/{d['tried']}"
                                                             for d in depth),
         "value": ", ".join(f"{d['rate']:.2f}" for d in depth), "definition": "Deeper positions are accepted less often."},
        {"metric": "Tokens per target forward pass", "formula": "characters emitted / rounds (one pass each)",
         "counts": f"{tokens} / {n}", "value": f"{tokens / n:.2f}" if n else "–",
         "definition": DEFINITIONS["tokens_per_forward"]},
        {"metric": "Expected tokens per round", "formula": "(1 − α^(K+1)) / (1 − α)",
         "counts": f"α = {accepted}/{tried}, K = {k}", "value": f"{t['expected_per_round']:.2f}",
         "definition": DEFINITIONS["expected_per_round"]},
        {"metric": "Speedup", "formula": "plain decoding's wall time / speculative wall time, same characters",
         "counts": speed_counts, "value": speed_value,
         "definition": DEFINITIONS["speedup"] + " The shoot-out page measures it over whole runs and every drafter."},
    ]  # fmt: skip


def drafter_glossary() -> list[dict]:
    """The drafters with a glossary paragraph (Drafter.glossary), each naming its paper."""
    return [
        {"drafter": name, "paper": cls.paper, "text": cls.glossary} for name, cls in REGISTRY.items() if cls.glossary
    ]
