"""Token n-gram counts for real models (specviz/llm/ngrams.py): sparse counts agree with dense ones, rows are the
smoothed counts, and the tables are kept on disk."""

import numpy as np
import torch

from models.checkpoint import ngram_counts
from specviz.llm.ngrams import count, token_counts
from tests.llm_models import checkpoint, corpus_slice


def test_sparse_counts_equal_dense_counts():
    V = 11
    ids = np.random.default_rng(0).integers(0, V, 3000)
    bigram, trigram = ngram_counts(torch.from_numpy(ids), V)
    sb, st = count(ids, 2, V), count(ids, 3, V)
    for a in range(V):
        assert sb.evidence((a,)) == int(bigram[a].sum())
        torch.testing.assert_close(sb.row((a,)), (bigram[a].double() + 1 / V) / (bigram[a].sum() + 1))
        for b in range(V):
            assert st.evidence((a, b)) == int(trigram[a, b].sum())
            torch.testing.assert_close(st.row((a, b)), (trigram[a, b].double() + 1 / V) / (trigram[a, b].sum() + 1))


def test_token_counts_are_kept_on_disk(tmp_path):
    ck = checkpoint("llama")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(corpus_slice(5000))
    bigram, trigram = token_counts(ck.tokenizer, corpus, tmp_path / "cache")
    assert len(list((tmp_path / "cache").glob("*.npz"))) == 1
    again, _ = token_counts(ck.tokenizer, corpus, tmp_path / "cache")
    assert np.array_equal(again.keys, bigram.keys) and np.array_equal(again.counts, bigram.counts)
    ids = ck.tokenizer.encode(corpus.read_text())
    assert int(bigram.counts.sum()) == len(ids) - 1 and int(trigram.counts.sum()) == len(ids) - 2


def test_suffix_indices_pack_wide_ids():
    """Suffix decoding's indices with a real model's ids (four bytes each): the same occurrences as a naive
    search, the same trees from both indices, and the same trees as one byte an id where ids fit in one."""
    from specviz.drafters.suffix import ContextSearch, SuffixIndex, candidate_tree

    rng = np.random.default_rng(1)
    phrase = rng.integers(0, 50_000, 7).tolist()
    text = []
    for _ in range(30):
        text += phrase[: rng.integers(2, 8)] + rng.integers(0, 50_000, 3).tolist()
    text += [1, 256, 1, 256, 1]  # ids whose bytes overlap a shifted match: 00 00 01 00 | 00 00 01 00
    for pattern in (phrase[:2], phrase[:4], [256, 1], [1, 256, 1], [1, 0]):
        naive = [i for i in range(len(text) - len(pattern)) if text[i : i + len(pattern)] == pattern]
        assert ContextSearch(text, 4).starts(pattern) == naive
        lo, hi = SuffixIndex(np.array(text), None, 4).find(pattern)
        assert hi - lo == naive.__len__() + (text[-len(pattern) :] == pattern)
    args = (4, 16, 0.1, 16)
    context = text + phrase[:2]
    assert candidate_tree(ContextSearch(context, 4), context, *args) == candidate_tree(
        SuffixIndex(np.array(context), None, 4), context, *args
    )
    assert candidate_tree(ContextSearch(context, 4), context, *args)["tokens"], "the test drafts nothing"
    small = [t % 256 for t in context]
    assert candidate_tree(ContextSearch(small, 4), small, *args) == candidate_tree(ContextSearch(small), small, *args)
