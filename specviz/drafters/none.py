"""Plain autoregressive decoding: no draft, so each round is one target pass and one token."""

from specviz.drafters.base import Drafter, chain


class NoDrafter(Drafter):
    """The baseline every figure is measured against."""

    name = "none"
    summary = "no draft: plain decoding, one target pass per token"
    paper = "the baseline"
    preset = "Free verse"
    drafts = False
    bpe = True

    @classmethod
    def peer(cls, k):
        return {}  # transformers' plain greedy generate()

    def draft(self, context, k, temperature, gen):
        return chain([])
