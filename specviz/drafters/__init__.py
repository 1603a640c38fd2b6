"""Every drafter behind one interface (see base.py), made by name for one generation."""

from models.distilled import load_table
from models.medusa import cached_heads
from specviz.drafters.base import Draft, Drafter, chain
from specviz.drafters.bigram import BigramDrafter
from specviz.drafters.distilled import DistilledDrafter, DistilledTreeDrafter
from specviz.drafters.eagle import EagleDrafter, shared_head
from specviz.drafters.eagle_tree import EagleTreeDrafter
from specviz.drafters.layer_skip import LayerSkipDrafter
from specviz.drafters.lookahead import LookaheadDrafter
from specviz.drafters.medusa import MedusaDrafter
from specviz.drafters.nasd import NASDDrafter
from specviz.drafters.neural import NeuralDrafter
from specviz.drafters.neural_tree import NeuralTreeDrafter
from specviz.drafters.prompt_lookup import PromptLookupDrafter
from specviz.drafters.suffix import SuffixDrafter, corpus_index
from specviz.drafters.trie import TrieDrafter
from specviz.drafters.trigram import TrigramDrafter

DRAFTERS = ("none", "bigram", "trigram", "trie", "nasd", "prompt-lookup", "neural", "neural-tree", "distilled",
            "distilled-tree", "suffix", "layer-skip", "lookahead", "medusa", "eagle1", "eagle3", "eagle3-tree")  # fmt: skip
TREE_DRAFTERS = (
    "trie",
    "neural-tree",
    "distilled-tree",
    "suffix",
    "lookahead",
    "medusa",
    "eagle3-tree",
)  # send trees (chains-only verifiers refuse them)
SAMPLED_TREE_DRAFTERS = ("neural-tree", "eagle3-tree")  # trees of sampled tokens (Draft.sampling set at T > 0)
NEURAL_DRAFTERS = ("neural", "neural-tree")  # drafters that need the tiny draft model
EAGLE_DRAFTERS = ("eagle1", "eagle3", "eagle3-tree")  # draft heads on the target's features (models/eagle.py)


class NoDrafter(Drafter):
    """Plain autoregressive decoding: no draft, so each round is one target forward pass and
    one token. The baseline every figure is measured against."""

    name = "none"

    def draft(self, context, k, temperature, gen):
        return chain([])


def eagle_head_name(drafter: str, settings) -> str:
    """The head file an EAGLE drafter uses (models/eagle.py HEAD_NAMES)."""
    return "eagle1" if drafter == "eagle1" else "eagle3" if settings.eagle_ttt else "eagle3-nottt"


def make_drafter(name: str, settings, target_ckpt, prompt: list[int], draft_model=None, target_cache=None) -> Drafter:
    """``settings`` carries the knobs (see specviz.core.engine.Settings); ``draft_model`` is the
    tiny GPT, needed only by the neural drafters (NEURAL_DRAFTERS)."""
    # target_cache: the generation's own target CachedModel, needed only by layer-skip, which
    # drafts with the target's first layers inside the target's KV cache (no second prefill).
    s = settings
    if name == "none":
        return NoDrafter()
    if name == "bigram":
        return BigramDrafter(target_ckpt.bigram_counts)
    if name == "trigram":
        return TrigramDrafter(target_ckpt.bigram_counts, target_ckpt.trigram_counts, s.min_context_count)
    if name == "trie":
        return TrieDrafter(prompt, s.trie_n, s.trie_prefix_len, s.trie_num_draft)
    if name == "nasd":
        return NASDDrafter(prompt, s.nasd_n, s.nasd_filler_top_k, s.nasd_stop_if_unknown)
    if name == "prompt-lookup":
        return PromptLookupDrafter(s.lookup_max_ngram, s.lookup_min_ngram)
    if name in ("distilled", "distilled-tree"):
        table = load_table(target_ckpt.path)
        if name == "distilled":
            return DistilledDrafter(table, s.min_context_count, s.distilled_context)
        return DistilledTreeDrafter(table, s.min_context_count, s.distilled_context, s.distilled_nodes)
    if name == "suffix":
        corpus = corpus_index(chars=target_ckpt.tokenizer.chars)
        return SuffixDrafter(corpus, s.suffix_max_match, s.suffix_min_prob, s.suffix_max_nodes)
    if name == "layer-skip":
        if target_cache is None:
            raise ValueError("the layer-skip drafter drafts in the target's KV cache: pass target_cache")
        return LayerSkipDrafter(target_cache, s.layer_skip_layers)
    if name == "medusa":  # heads on the target's own features, read from its cache (no extra pass)
        if target_cache is None:
            raise ValueError("the medusa drafter reads the target's cached features: pass target_cache")
        return MedusaDrafter(target_cache, cached_heads(target_ckpt.path, target_cache.dtype), s.medusa_nodes,
                             s.medusa_top_k)  # fmt: skip
    if name == "lookahead":
        return LookaheadDrafter(prompt, target_ckpt.config.block_size, s.lookahead_window, s.lookahead_ngram,
                                s.lookahead_candidates, window_alone=not s.k_auto)  # fmt: skip
    if name in EAGLE_DRAFTERS:
        if target_cache is None:
            raise ValueError(f"the {name} drafter reads the target's features from its cache: pass target_cache")
        head = shared_head(eagle_head_name(name, s), target_ckpt)
        if name == "eagle3-tree":
            return EagleTreeDrafter(head, target_cache, s.eagle_tree_nodes, s.eagle_tree_children, s.tree_sampling)
        return EagleDrafter(head, target_cache, name)
    if name in NEURAL_DRAFTERS:
        if draft_model is None:
            raise ValueError(f"the {name} drafter needs the tiny draft model")
        if name == "neural":
            return NeuralDrafter(draft_model)
        return NeuralTreeDrafter(draft_model, s.neural_tree_nodes, s.neural_tree_children, s.tree_sampling)
    raise ValueError(f"unknown drafter {name!r}; choose one of: {', '.join(DRAFTERS)}")


__all__ = [
    "DRAFTERS",
    "EAGLE_DRAFTERS",
    "NEURAL_DRAFTERS",
    "SAMPLED_TREE_DRAFTERS",
    "TREE_DRAFTERS",
    "Draft",
    "Drafter",
    "NoDrafter",
    "chain",
    "make_drafter",
]
