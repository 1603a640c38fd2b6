"""Neural draft (seed 003, classic speculative sampling): the tiny nanoGPT drafts
autoregressively with its own KV cache. At the start of each round the cache is trimmed to
the tokens the target accepted (the longest common prefix with the real context), in step
with the target's own trim, and only the missing tokens are fed, in the same forward pass as
the first drafted position: K tiny forward passes per round, not K + 1."""

from models.gpt import GPT
from specviz.core.sampling import probs_from_logits
from specviz.drafters.base import Drafter, model_cache, sample_chain


class NeuralDrafter(Drafter):
    name = "neural"
    summary = "a tiny GPT (0.2M parameters) drafting autoregressively"
    paper = "Speculative sampling (Leviathan et al., 2023; Chen et al., 2023)"
    preset = "Free verse"
    needs = frozenset({"draft_model"})
    bpe = True  # any draft model that shares the target's tokenizer (checked before loading)
    stateful = True
    # A tiny-model pass is mostly per-op overhead. The bench's draft c (5 presets, 128 tokens, 1 thread):
    # 0.48-0.51 at K = 1, 0.40-0.43 at K = 2, 0.36-0.40 at K = 3 (the first pass also feeds
    # the tokens accepted last round); adaptive K drafts 2-3 deep, so 0.4.
    draft_cost = 0.4

    @classmethod
    def build(cls, src):
        return cls(src.need("draft_model", cls.name))

    def __init__(self, model: GPT):
        self.lm = model_cache(model)

    def draft(self, context, k, temperature, gen):
        before = self.lm.length
        self.lm.trim_to(context)  # drops the rejected drafts of the last round
        synced = self.lm.length  # what is missing is fed with the first drafted position

        def next_dist(seq):
            # Untempered probabilities: sample_chain applies the temperature once.
            return probs_from_logits(self.lm.next_logits(seq), 1.0), {}

        draft = sample_chain(next_dist, context, k, temperature, gen)
        draft.notes = {"draft_cache": {"before": before, "after_trim": synced, "after_draft": self.lm.length}}
        return draft
