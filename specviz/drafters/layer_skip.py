"""Layer-skip self-speculation (LayerSkip, Elhoushi et al., 2024; Draft & Verify, Zhang et al.,
2023): the target drafts for itself with its first n layers only, exiting early through its own
final layer norm and lm_head. No second model, no second vocabulary, no second prompt to prefill.

The draft's cache is the target's cache. Layer i < n of the full model computes exactly the same
keys and values as layer i of the early-exit model for the same tokens at the same positions, so
the drafter takes no copy: it runs its n layers in the target's own KV buffers
(TargetModel.first_layers), writing each drafted token's keys and values where the verification
pass writes them next, as scratch after the committed entries. The verify pass then overwrites them with the
same values, and the target's trim keeps the accepted ones: there is no draft cache to trim or
prefill, ever. A round costs k one-token passes through n layers, plus the usual verify pass.
What is not saved: the verify pass is the engine's one full forward, so it computes the first n
layers of the k drafted tokens again (LayerSkip proper resumes verification from the exit layer's
hidden states; that would need a second verify path in the engine).

When the context window jumps (every half block past block_size) the target's cache is stale at
draft time and the engine re-prefills it in the verify pass: that round is not drafted (an empty
draft, said in the notes) rather than prefilling the first n layers twice.

q is the temperature-scaled early-exit distribution (a sampled chain at T > 0, argmax at T = 0),
exactly what each token was drawn from, so verification stays lossless whatever n is; n only
changes how often drafts are accepted. Without an early-exit fine-tune (LayerSkip trains one),
the shallow exits of this 4-layer model are rough guesses.
"""

import torch

from specviz.core.sampling import probs_from_logits
from specviz.core.target import TargetModel, window_start
from specviz.drafters.base import Drafter, chain, sample_chain


class LayerSkipDrafter(Drafter):
    name = "layer-skip"
    summary = "the target's own first layers, exiting early"
    paper = "LayerSkip (Elhoushi et al., 2024); Draft & Verify (Zhang et al., 2023)"
    glossary = (
        "Layer-skip is self-speculation: the target drafts for itself with only its first n layers, exiting "
        "early through its own final norm and output head, then checks the draft with all its layers. The draft "
        "layers' keys and values are the target's own, so the draft reuses the target's cache and nothing is "
        "prefilled twice; more draft layers guess better but cost more."
    )
    needs = frozenset({"target_cache"})
    bpe = True  # any target with first_layers and head (a transformers Llama or GPT-2: specviz/llm/target.py)
    stateful = True  # bound to one generation's target cache
    # Per drafted token, in target forward units: one token through n of the target's L layers,
    # plus the shared head. On this CPU a pass is mostly per-op overhead, so it scales with the
    # layers run: the bench's draft c at n = 2 of 4 was 0.56-0.66 of a one-token target pass (K = 1-3,
    # 5 presets, 1 thread), i.e. 1.2 n / L; set per instance from the actual n.
    draft_cost = 0.6

    @classmethod
    def build(cls, src):
        return cls(src.need("target", cls.name), src.settings.layer_skip_layers)

    @classmethod
    def check(cls, settings, config):
        if settings.layer_skip_layers >= config.n_layer:
            raise ValueError(
                f"layer-skip draft layers must be below the target's {config.n_layer} layers, got {settings.layer_skip_layers}"
            )

    def __init__(self, target: TargetModel, n_layers: int):
        L = target.n_layer
        if not 1 <= n_layers < L:
            raise ValueError(f"layer-skip needs 1 <= layers < {L} (the target's layer count), got {n_layers}")
        self.target, self.n = target, n_layers
        self.draft_cost = 1.2 * n_layers / L
        self.fed = 0  # tokens run through the n draft layers, all rounds (tests: no prefill hides here)

    def early_exit_logits(self, token: int, index: int) -> torch.Tensor:
        """Feed one token at cache entry ``index`` (position index) through the first n layers and
        exit early; it attends to every entry before it. -> (V,) logits"""
        t = self.target
        x = t.first_layers([token], [index], index, self.n)  # (1, C)
        self.fed += 1
        return t.head(x)[0]  # (V,)

    @torch.no_grad()
    def draft(self, context, k, temperature, gen):
        t = self.target
        if t.start != window_start(len(context), t.block_size):
            return chain([], notes={"layers": self.n, "skipped": "the window moved: the verify pass re-prefills the "
                                    "target's cache, and drafting resumes from it next round"})  # fmt: skip
        # Round 0 (or a cache behind the context): the prefill the verify pass would do anyway. The engine
        # runs it before the draft; called on its own, the drafter runs it here. It is never run twice.
        t.sync(context)
        P = t.length  # the root (context[-1]) goes at entry P, drafted token j at P + 1 + j

        def next_dist(seq):
            j = len(seq) - len(context)  # tokens drafted so far
            # Untempered: sample_chain applies the temperature once, as for the target's p.
            return probs_from_logits(self.early_exit_logits(seq[-1], P + j), 1.0), {}

        fed = self.fed
        draft = sample_chain(next_dist, context, k, temperature, gen)
        draft.notes = {"layers": self.n, "of": t.n_layer, "cache_entries_reused": P,
                       "tokens_fed": self.fed - fed}  # fmt: skip
        return draft
