"""Acceptance by draft depth for the EAGLE heads and the tiny neural draft, measured: the same
prompts, K, temperature and seed for each series, run through the engine (``python -m specviz
eagle-depth``; the step page's EAGLE panel and the model card draw it).

    series        eagle1 (EAGLE-1 head), eagle3 (EAGLE-3, trained with training-time test),
                  eagle3 no TTT (the same head trained on step 0 only), neural (the tiny model)
    prompts       windows of the corpus's validation split (its last 10%, which no head or model
                  trained on), or the app's presets when the corpus is absent
    per depth d   accepted / tried over every round of every prompt (specviz.teaching.stats's
                  acceptance_by_position: a chain's depth d is tried only when 1..d-1 were
                  accepted), and accepted / rounds (the chance a round gets at least d tokens in)
"""

from dataclasses import replace
from pathlib import Path

from specviz.core.engine import Generation
from specviz.core.settings import Settings
from specviz.teaching.stats import acceptance_by_position
from specviz.training.train import split

SERIES = {"eagle1": {"drafter": "eagle1"}, "eagle3": {"drafter": "eagle3"},
          "eagle3 no TTT": {"drafter": "eagle3", "eagle_ttt": False}, "neural": {"drafter": "neural"}}  # fmt: skip


def validation_prompts(tokenizer, corpus: Path, n: int = 8, length: int = 96) -> list[list[int]]:
    """n prompts of ``length`` characters, evenly spaced over the validation split, each starting at a line."""
    ids = tokenizer.encode(Path(corpus).read_text(encoding="utf-8"))
    _, val = split(ids)
    out = []
    for i in range(n):
        s = i * (len(val) - 2 * length) // n
        while s < len(val) - length and val[s - 1] != tokenizer.encode("\n")[0]:
            s += 1  # start after a newline, as a reader would
        out.append(list(val[s : s + length]))
    return out


def depth_acceptance(target, prompts: list[list[int]], draft_model, temperature: float, k: int = 4,
                     max_new_tokens: int = 64, seed: int = 0, series: dict = SERIES) -> dict:  # fmt: skip
    """{series: {"rate": [accepted / tried per depth 1..k], "reached": [accepted / rounds], "tried": [...],
    "accepted": [...], "rounds": n, "tokens_per_round": float}}"""
    out = {}
    base = Settings(k=k, temperature=temperature, max_new_tokens=max_new_tokens, seed=seed)
    for name, knobs in series.items():
        rounds = []
        for i, prompt in enumerate(prompts):
            s = replace(base, seed=seed + i, **knobs)
            rounds += Generation(target, prompt, s, draft_model).run().rounds
        rows = {r["depth"]: r for r in acceptance_by_position(rounds)}
        tried = [rows[d]["tried"] if d in rows else 0 for d in range(1, k + 1)]
        accepted = [rows[d]["accepted"] if d in rows else 0 for d in range(1, k + 1)]
        out[name] = {"rate": [a / t if t else 0.0 for a, t in zip(accepted, tried, strict=True)],
                     "reached": [a / len(rounds) for a in accepted], "tried": tried, "accepted": accepted,
                     "rounds": len(rounds), "tokens_per_round": sum(len(r.emitted) for r in rounds) / len(rounds)}  # fmt: skip
    return out
