"""A recorded round as the sequence of phases a teacher walks through, one idea at a time:

    draft      the drafter proposes its candidates (nothing is decided yet)
    verify     one target forward pass over the root and every candidate: p at every node
    check i    candidate i: the uniform draw u against min(1, p/q); accepted or rejected
    residual   after a rejection: the correction drawn from norm(max(0, p - q))
    bonus      after a fully accepted path: one more token drawn from p, for free
    trim       the KV cache keeps the root and the accepted path, drops the rest

Each phase names the one check it is about (``check``: an index into ``record.positions``), so the
text, the p/q chart, the draw, the residual and the KV ledger can all point at the same thing at
the same moment. A pure function of the record: replaying phases never recomputes anything.
"""

from dataclasses import dataclass

from specviz.charts.distributions import label
from specviz.core.record import RoundRecord

STAGES = ("draft", "verify", "check", "residual", "bonus", "trim")


@dataclass(frozen=True)
class Phase:
    stage: str  # one of STAGES
    title: str  # a short label for the phase control
    sentence: str  # what happens, in words (plain text: the page escapes it)
    check: int | None = None  # the check this phase is about: an index into record.positions
    kv_stage: int = 1  # how many rows of the KV ledger exist by now (1 before, 2 verify writes, 3 after trim)


def _n(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def round_phases(r: RoundRecord, vocab: list[str]) -> list[Phase]:
    n, kind = len(r.draft_tokens), "tree" if r.tree_mask is not None else "chain"
    phases = [
        Phase("draft", "1 draft", f"The drafter proposes {n} candidate{'s' if n != 1 else ''} as a {kind}: "
              f"{' '.join(repr(label(vocab, t)) for t in r.draft_tokens) or 'nothing this round'}. "
              "Nothing is decided yet.") if n else
        Phase("draft", "1 draft", "The drafter proposes nothing this round: the pass below is plain decoding."),
        Phase("verify", "2 verify", f"One target forward pass over the root and the {n} candidate"
              f"{'s' if n != 1 else ''} ({n + 1} positions) gives p after every one of them at once. "
              f"The KV cache grows from {r.kv_before} to {r.kv_after_verify} entries.", kv_stage=2),
    ]  # fmt: skip
    for i, pos in enumerate(r.positions):
        x = repr(label(vocab, pos.token))
        if pos.u is None:
            how = f"greedy: accepted only if {x} is the target's argmax"
        else:
            op = "<" if pos.accepted else "≥"
            how = f"u = {pos.u:.3f} {op} min(1, p/q) = min(1, {pos.p_x:.3f}/{pos.q_x:.3f}) = {pos.accept_prob:.3f}"
        verdict = "accepted" if pos.accepted else "rejected"
        phases.append(Phase("check", f"{3 + i} check {x}", f"Depth {pos.depth}, candidate {x}: {how}, so {verdict}.",
                            check=i, kv_stage=2))  # fmt: skip
    step = 3 + len(r.positions)
    last = repr(label(vocab, r.emitted[-1]))
    if r.correction is not None:
        rejected = next((i for i in reversed(range(len(r.positions))) if not r.positions[i].accepted), None)
        phases.append(Phase("residual", f"{step} residual", f"A candidate was rejected, so the round ends with a "
                            f"correction: {last}, drawn from norm(max(0, p − q)), where the target has more mass than "
                            "the draft.", check=rejected, kv_stage=2))  # fmt: skip
    else:
        phases.append(Phase("bonus", f"{step} bonus", f"Every candidate on the path was accepted, so the pass's last "
                            f"row of p gives one more token for free: the bonus {last}.", kv_stage=2))  # fmt: skip
    kept, dropped = r.kv_after_trim - r.kv_before, r.kv_after_verify - r.kv_after_trim
    phases.append(Phase("trim", f"{step + 1} trim", f"The KV cache keeps {_n(kept, 'entry', 'entries')} (the root and "
                        f"{_n(len(r.accepted_path), 'accepted candidate')}) and drops {dropped}: {r.kv_before} → "
                        f"{r.kv_after_trim}. The round emitted {_n(len(r.emitted), 'token')} for one target pass.",
                        kv_stage=3))  # fmt: skip
    return phases
