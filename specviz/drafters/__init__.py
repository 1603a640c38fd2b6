"""Every drafter behind one interface (see base.py), made by name for one generation."""

from specviz.drafters.base import Draft, Drafter, chain

DRAFTERS = ("none", "bigram", "trigram", "trie", "nasd", "prompt-lookup", "neural")


class NoDrafter(Drafter):
    """Plain autoregressive decoding: no draft, so each round is one target forward pass and
    one token. The baseline every figure is measured against."""

    name = "none"

    def draft(self, context, k, temperature, gen):
        return chain([])


def make_drafter(name: str, settings, target_ckpt, prompt: list[int], draft_model=None) -> Drafter:
    """``settings`` carries the knobs (see specviz.engine.Settings); ``draft_model`` is the
    tiny GPT, needed only by the neural drafter."""
    if name == "none":
        return NoDrafter()
    if name == "bigram":
        from specviz.drafters.bigram import BigramDrafter

        return BigramDrafter(target_ckpt.bigram_counts)
    if name == "trigram":
        from specviz.drafters.trigram import TrigramDrafter

        return TrigramDrafter(target_ckpt.bigram_counts, target_ckpt.trigram_counts, settings.min_context_count)
    if name == "trie":
        from specviz.drafters.trie import TrieDrafter

        return TrieDrafter(prompt, settings.trie_n, settings.trie_prefix_len, settings.trie_num_draft)
    if name == "nasd":
        from specviz.drafters.nasd import NASDDrafter

        return NASDDrafter(prompt, settings.nasd_n, settings.nasd_filler_top_k, settings.nasd_stop_if_unknown)
    if name == "prompt-lookup":
        from specviz.drafters.prompt_lookup import PromptLookupDrafter

        return PromptLookupDrafter(settings.lookup_max_ngram, settings.lookup_min_ngram)
    if name == "neural":
        from specviz.drafters.neural import NeuralDrafter

        if draft_model is None:
            raise ValueError("the neural drafter needs the tiny draft model")
        return NeuralDrafter(draft_model)
    raise ValueError(f"unknown drafter {name!r}; choose one of: {', '.join(DRAFTERS)}")


__all__ = ["DRAFTERS", "Draft", "Drafter", "NoDrafter", "chain", "make_drafter"]
