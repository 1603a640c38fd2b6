"""N-gram Assisted Speculative Decoding (NASD): the drafter is a table, not a model.

The storage maps a context (the last n-1 tokens) to counts of the token that followed it. It
starts with every n-gram of the prompt. To draft, look up the last n-1 tokens and propose the
most frequent continuation (ties: lowest id), append it, repeat. An unknown context either ends
the draft (stop_if_unknown) or is bridged with a filler: the most frequent next token overall.
After each round the storage learns the emitted tokens and, with filler_top_k > 1, also the
target's other top tokens at each position ("enrichment"), so it adapts to this generation.
"""

from collections import Counter

import torch

from specviz.drafters.base import Draft, Drafter, chain


def _best(counts: dict[int, int]) -> int:
    return min(counts, key=lambda t: (-counts[t], t))  # most frequent, ties to the lowest id


class NASDDrafter(Drafter):
    name = "nasd"
    summary = "n-gram storage that grows from the prompt and every round's output"
    paper = "N-gram Assisted Speculative Decoding (NASD)"
    preset = "Repetitive"
    stateful = True
    deterministic = True

    @classmethod
    def build(cls, src):
        s = src.settings
        return cls(src.prompt, s.nasd_n, s.nasd_filler_top_k, s.nasd_stop_if_unknown)

    def __init__(self, prompt_tokens: list[int], n: int = 3, filler_top_k: int = 1, stop_if_unknown: bool = True):
        assert n >= 1 and filler_top_k >= 1
        self.n = n
        self.filler_top_k = filler_top_k
        self.stop_if_unknown = stop_if_unknown
        self.storage: dict[tuple[int, ...], Counter] = {}
        self.unigram: Counter = Counter()  # next-token totals over all contexts, for the filler
        self.entries = 0  # distinct (context, token) pairs, kept as they are added: notes ask every round
        prompt = list(prompt_tokens)
        for pos in range(n - 1, len(prompt)):
            self._add(tuple(prompt[pos - n + 1 : pos]), prompt[pos])

    def _add(self, ctx: tuple[int, ...], token: int) -> None:
        counts = self.storage.get(ctx)
        if counts is None:  # not setdefault(ctx, Counter()): that builds a Counter on every call
            counts = self.storage[ctx] = Counter()
        self.entries += token not in counts
        counts[token] += 1
        self.unigram[token] += 1

    def _ctx(self, seq: list[int]) -> tuple[int, ...] | None:
        if len(seq) < self.n - 1:
            return None  # too short to have a context of n-1 tokens
        return tuple(seq[len(seq) - self.n + 1 :])

    def size(self) -> dict:
        return {"contexts": len(self.storage), "entries": self.entries}

    def rows(self) -> list[dict]:
        """The storage as sorted, JSON-ready rows, for the app to show."""
        return [
            {
                "context": list(ctx),
                "counts": [[t, c] for t, c in sorted(self.storage[ctx].items(), key=lambda x: (-x[1], x[0]))],
            }
            for ctx in sorted(self.storage)
        ]

    def draft(self, context: list[int], k: int, temperature: float = 0.0, gen: torch.Generator | None = None) -> Draft:
        seq, tokens, lookups, stopped = list(context[-(self.n - 1) :]), [], [], False  # all a context reads
        for _ in range(k):
            ctx = self._ctx(seq)
            counts = self.storage.get(ctx) if ctx is not None else None
            if counts:
                tok, filler = _best(counts), False
            elif self.stop_if_unknown or not self.unigram:
                stopped = True  # nothing to go on: a guess would most likely be rejected anyway
                lookups.append({"context": list(ctx or []), "known": False, "filler": False, "token": None})
                break
            else:
                tok, filler = _best(self.unigram), True
            lookups.append({"context": list(ctx or []), "known": not filler, "filler": filler, "token": tok})
            tokens.append(tok)
            seq.append(tok)
        notes = {
            "n": self.n,
            "storage": self.size(),
            "lookups": lookups,  # one per attempt; a stop adds a last entry with token None
            "known": [lk["known"] for lk in lookups if lk["token"] is not None],  # per proposed token
            "filler_used": any(lk["filler"] for lk in lookups),
            "stopped_unknown": stopped,
        }
        return chain(tokens, q=None, notes=notes)

    def update(self, context: list[int], emitted: list[int], p: torch.Tensor) -> dict:
        tail = list(context[-(self.n - 1) :])  # the contexts of the emitted tokens lie in the last n - 1 tokens
        seq = tail + list(emitted)
        added = []
        for i, tok in enumerate(emitted):
            ctx = self._ctx(seq[: len(tail) + i])  # as short as the whole context when that is shorter
            if ctx is None:
                continue
            self._add(ctx, tok)
            added.append({"context": list(ctx), "token": tok, "source": "accepted"})
            if self.filler_top_k > 1:
                # the top filler_top_k of the target, less the token already counted; sorted in
                # Python so ties break to the lowest id (torch.topk's tie order is unspecified)
                row = p[i].tolist()
                top = sorted(range(len(row)), key=lambda t: (-row[t], t))[: self.filler_top_k]
                for t in top:
                    if t != tok and row[t] > 0:
                        self._add(ctx, t)
                        added.append({"context": list(ctx), "token": t, "source": "filler_top_k"})
        return {"added": added, "storage": self.size()}
