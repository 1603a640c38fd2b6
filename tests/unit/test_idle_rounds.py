"""A drafter that drafts nothing in a round pays no upkeep in it: EAGLE's head catches up lazily, when it
drafts next, over every feature the target kept since (specviz/drafters/eagle.py, HeadCache.prepare). Its
drafts after idle rounds are what a head fed the whole context at once drafts, and the output stays plain
decoding's, whatever K = 0 rounds are interleaved."""

from conftest import GREEDY_TEXT, assert_plain_greedy

from specviz.core.choice import Choice
from specviz.core.engine import Generation
from specviz.core.settings import Settings

SCHEDULE = (3, 0, 0, 0, 2, 0, 1, 0, 0, 0, 0, 3, 0, 2, 2, 0)  # K per round, cycled: idle runs of 1 to 4 rounds


class Schedule:
    """Adaptive K's seam (Generation.adaptive) with a fixed K per round: the rounds idle where it says 0."""

    def __init__(self, ks):
        self.ks, self.i = ks, 0

    def choose(self, limit: int) -> Choice:
        k = min(self.ks[self.i % len(self.ks)], limit)
        self.i += 1
        return Choice(k, 0.5, 1.0, 0.5, limit)

    def idle_round(self) -> bool:
        return False  # no shadow draft: an idle round does not consult the drafter at all

    def update(self, *args) -> None:
        pass


def test_eagle_catches_up_lazily_and_drafts_as_if_fed_at_once(target):
    # past block_size (256) inside the run: a window jump falls among the idle rounds
    prompt = target.tokenizer.encode(GREEDY_TEXT * 2)[:230]
    settings = Settings(drafter="eagle3", k=3, temperature=0, max_new_tokens=60)
    g = Generation(target, prompt, settings)
    g.adaptive = Schedule(SCHEDULE)
    trace = g.run()
    assert_plain_greedy(target, prompt, trace.tokens[len(prompt) :])  # the output: plain decoding's
    context, drafted, caught_up, jumps = list(prompt), 0, 0, 0
    for r in trace.rounds:
        if r.k_choice.k and r.reprefill:  # the window moved: not drafted, the verify pass re-prefills (eagle.py)
            assert r.draft_tokens == [] and "window moved" in r.draft_notes["skipped"]
            jumps += 1
        elif r.k_choice.k:
            assert r.draft_notes.get("head") == "eagle3"
            fresh = Generation(target, context, settings)  # a new head: fed every entry of the context at once
            fresh.adaptive = Schedule((r.k_choice.k,))
            fresh.target.sync(context)  # its window's cache and features (past a jump too), as the run's
            d = fresh.begin()
            assert r.draft_tokens == d.draft.tokens, f"round {r.index}"
            drafted += bool(r.draft_tokens)
            caught_up += r.draft_notes.get("entries_fed", 0) > 2  # idle rounds' entries fed in one pass
        else:
            assert r.draft_notes == {"adaptive K": "chose K = 0: the drafter was not asked"}
        context += r.emitted
    assert drafted >= 8 and caught_up >= 4 and jumps + sum(r.reprefill for r in trace.rounds) >= 1
    head = g.drafter.cache  # fed only in drafting rounds, each entry once; what the last idle rounds kept waits
    assert head.fed == sum(r.draft_notes.get("entries_fed", 0) for r in trace.rounds)
    assert trace.rounds[-1].k_choice.k == 0 and head.n < g.target.length
