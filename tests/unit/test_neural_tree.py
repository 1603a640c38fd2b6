"""The neural draft tree: its shape (budget, depth, children per node, one tiny pass per depth);
each node's q is the distribution it was drawn from as the verifier reads it (both samplings),
and is the tiny model's own distribution after the node's path (so the draft model's tree
attention is right); at T = 0 the children are the top tokens, deterministic; the drafter's cache
keeps the context and drops the tree. Float64 throughout."""

import pytest
import torch

from specviz.core.sampling import probs_from_logits, scale_probs
from specviz.drafters.neural_tree import NeuralTreeDrafter
from specviz.verifiers import children_of, sibling_rows

PROMPT = "ROMEO:\nBut soft, what light through yonder window breaks?\nROMEO:\nBut soft, what light"
K, NODES, CHILDREN = 4, 12, 3


def drafts(tiny, temperature: float, sampling: str, rounds: int = 6):
    """(context, draft, drafter) for a few rounds; each round "accepts" the first child's first
    two levels and appends a token, so the drafter's cache has something to trim."""
    drafter = NeuralTreeDrafter(tiny.model, NODES, CHILDREN, sampling)
    gen = torch.Generator().manual_seed(7)
    context = tiny.tokenizer.encode(PROMPT)
    for _ in range(rounds):
        draft = drafter.draft(context, K, temperature, gen)
        yield context, draft, drafter
        kids = children_of(draft.parents)
        first = kids[-1][0]
        accepted = [draft.tokens[first]] + [draft.tokens[c] for c in kids[first][:1]]
        context = context + accepted + [int(torch.randint(65, (), generator=gen))]


@torch.no_grad()
def tiny_probs(tiny, seq: list[int]) -> torch.Tensor:
    """The tiny model's distribution after seq, no cache. (V,)"""
    logits, _ = tiny.model(torch.tensor([seq]), torch.arange(len(seq)))
    return probs_from_logits(logits[0, -1], 1.0)


def path_to(parents: list[int], i: int) -> list[int]:
    out = []
    while i >= 0:
        out.append(i)
        i = parents[i]
    return out[::-1]


@pytest.mark.parametrize("sampling", ["with-replacement", "without-replacement"])
@pytest.mark.parametrize("temperature", [0.8, 1.0])
def test_each_node_q_is_the_draft_distribution_it_was_drawn_from(tiny64, sampling, temperature):
    wide = 0
    for context, draft, drafter in drafts(tiny64, temperature, sampling):
        V = draft.q.size(-1)
        assert draft.sampling == sampling and draft.q.shape == (len(draft.tokens), V)
        assert torch.equal(sibling_rows(draft, V, draft.sampling), draft.q)  # what the verifier tries each against
        assert len(draft.tokens) == NODES and max(draft.depths) <= K and draft.notes["passes"] <= K
        for node, kids in children_of(draft.parents).items():
            assert len(kids) <= CHILDREN
            wide += len(kids) > 1
            if not kids:
                continue
            parent = [] if node < 0 else [draft.tokens[j] for j in path_to(draft.parents, node)]
            q = scale_probs(tiny_probs(tiny64, context + parent), temperature)  # (V,) the node's draft distribution
            assert torch.allclose(draft.q[kids[0]], q, atol=1e-10, rtol=0)  # the first child: the node's own q
            if sampling == "with-replacement":
                assert all(torch.equal(draft.q[c], draft.q[kids[0]]) for c in kids)
            else:
                assert len({draft.tokens[c] for c in kids}) == len(kids)  # distinct siblings
        assert drafter.lm.cached == context[drafter.lm.start :]  # the context kept, the tree dropped
    assert wide > 0  # some node did get several sampled children


def test_greedy_tree_is_the_top_tokens(tiny64):
    for context, draft, _ in drafts(tiny64, 0.0, "without-replacement", rounds=3):
        assert draft.q is None and draft.sampling is None and len(draft.tokens) == NODES
        for node, kids in children_of(draft.parents).items():
            if not kids:
                continue
            parent = [] if node < 0 else [draft.tokens[j] for j in path_to(draft.parents, node)]
            top = tiny_probs(tiny64, context + parent).topk(len(kids)).indices.tolist()
            assert [draft.tokens[c] for c in kids] == top  # siblings in rank order
        # the tree is spent along the likeliest branch: the argmax chain reaches the depth limit
        node, chain = -1, 0
        kids = children_of(draft.parents)
        while kids[node]:
            node, chain = kids[node][0], chain + 1
        assert chain == K


def test_budget_and_depth_limits(tiny64):
    gen = torch.Generator().manual_seed(0)
    context = tiny64.tokenizer.encode(PROMPT)
    for nodes, k in ((1, 4), (5, 1), (16, 8), (64, 2)):
        draft = NeuralTreeDrafter(tiny64.model, nodes, CHILDREN).draft(context, k, 1.0, gen)
        assert len(draft.tokens) <= nodes and max(draft.depths) <= k and draft.notes["passes"] <= k
    assert len(NeuralTreeDrafter(tiny64.model, 64, 2).draft(context, 2, 0.0, gen).tokens) == 2 + 4  # full binary
    empty = NeuralTreeDrafter(tiny64.model).draft(context, 0, 1.0, gen)
    assert empty.tokens == []
