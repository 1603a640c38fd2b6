"""N-Gram Trie drafter (the seed paper, section 3): tree drafts retrieved from the prompt itself,
with no draft model.

Build (Algorithm 1): slide a window of n tokens over the prompt, one token at a time. Each window
splits into a prefix P (its first L_p tokens) and a suffix S (the rest). For every sub-prefix
P[j:] the key P[j:] + S is inserted into a trie, adding 1 to the frequency of each node on its
path. The shorter sub-prefixes are what let a context match when its last L_p tokens never
appeared together in the prompt.

Draft: walk the last L_p tokens of the context from the root, dropping the first token until the
chain exists (backoff). The subtree below the matched node holds the continuations seen in the
prompt; keep its num_draft most frequent nodes (at most k deep) and flatten them depth first,
ready for tree attention (see base.tree_mask).
"""

import heapq

import torch

from specviz.drafters.base import Draft, Drafter


class NGramTrie:
    """Nodes live in flat lists indexed by id; 0 is the root. A child is always created after its
    parent, so ids are in topological order."""

    def __init__(self, max_prefix_len: int):
        self.max_prefix_len = max_prefix_len
        self.token: list[int | None] = [None]
        self.parent = [-1]
        self.freq = [0]  # the root counts every inserted key
        self.depth = [0]
        self.children: list[dict[int, int]] = [{}]  # token -> child id
        self.size = [1]  # nodes in each subtree, the node included; filled in by build

    def __len__(self) -> int:
        return len(self.token)

    def _insert(self, key: list[int]) -> None:
        node = 0
        self.freq[0] += 1
        for t in key:
            child = self.children[node].get(t)
            if child is None:
                child = len(self.token)
                self.children[node][t] = child
                self.token.append(t)
                self.parent.append(node)
                self.freq.append(0)
                self.depth.append(self.depth[node] + 1)
                self.children.append({})
            self.freq[child] += 1
            node = child

    @classmethod
    def build(cls, tokens: list[int], n: int, max_prefix_len: int) -> "NGramTrie":
        tokens = [int(t) for t in tokens]  # a tensor's elements would hash by identity
        trie = cls(max_prefix_len)
        for i in range(len(tokens)):
            window = tokens[i : i + n]  # shorter near the end
            p, s = window[:max_prefix_len], window[max_prefix_len:]
            if not s:
                continue
            for j in range(len(p)):
                trie._insert(p[j:] + s)
        trie.size = [1] * len(trie)
        for i in range(len(trie) - 1, 0, -1):  # children before parents
            trie.size[trie.parent[i]] += trie.size[i]
        return trie

    def find(self, path: list[int]) -> int | None:
        """Id of the node reached by walking path from the root, None if the chain breaks."""
        node = 0
        for t in path:
            node = self.children[node].get(int(t))
            if node is None:
                return None
        return node

    def match(self, context: list[int]) -> tuple[int | None, list[int]]:
        """Longest suffix (at most L_p tokens) of context that is a chain from the root."""
        for m in range(min(self.max_prefix_len, len(context)), 0, -1):
            suffix = [int(t) for t in context[-m:]]
            node = self.find(suffix)
            if node is not None:
                return node, suffix
        return None, []

    def ordered_children(self, node: int) -> list[int]:
        """Depth-first visiting order: most frequent first, ties to the lowest token id."""
        return sorted(self.children[node].values(), key=lambda c: (-self.freq[c], self.token[c]))

    def prune(self, node: int, k: int, num_draft: int) -> list[int]:
        """The num_draft most frequent descendants of node at most k below it (ties: shallower,
        then earlier depth first), as ids in depth-first order."""
        # The sibling ranks along a path sort like depth-first order. Going down, frequency never
        # grows and depth does, so a child always sorts after its parent: best-first expansion
        # pops nodes in global order without visiting the whole subtree (the paper's heap).
        heap = [(-self.freq[c], 1, (r,), c) for r, c in enumerate(self.ordered_children(node))]
        heapq.heapify(heap)
        kept = []  # (rank path, id)
        while heap and len(kept) < num_draft and k > 0:
            _, d, ranks, c = heapq.heappop(heap)
            kept.append((ranks, c))
            if d < k:
                for r, g in enumerate(self.ordered_children(c)):
                    heapq.heappush(heap, (-self.freq[g], d + 1, ranks + (r,), g))
        ids = {c for _, c in kept}
        assert all(self.parent[c] == node or self.parent[c] in ids for c in ids), "kept set not closed"
        return [c for _, c in sorted(kept)]

    def nodes(self) -> list[dict]:
        """Every node, for drawing: root is id 0 with parent -1 and token None."""
        return [
            {
                "id": i,
                "parent": self.parent[i],
                "token": self.token[i],
                "frequency": self.freq[i],
                "depth": self.depth[i],
            }
            for i in range(len(self))
        ]


class TrieDrafter(Drafter):
    """Builds the trie from the prompt once; the paper leaves it unchanged during generation."""

    name = "trie"
    summary = "an n-gram trie of the prompt, drafted as a tree"
    paper = "N-Gram Trie speculative decoding (Chen et al., 2025); trees as SpecInfer (Miao et al., 2024)"
    preset = "Quote a passage"
    panels = ("n-gram trie",)  # the tree page draws its trie
    tree = True
    deterministic = True

    @classmethod
    def build(cls, src):
        s = src.settings
        return cls(src.prompt, s.trie_n, s.trie_prefix_len, s.trie_num_draft)

    def __init__(self, prompt_tokens: list[int], n: int = 13, max_prefix_len: int = 3, num_draft: int = 16):
        self.n, self.max_prefix_len, self.num_draft = n, max_prefix_len, num_draft
        self.max_nodes = num_draft
        self.trie = NGramTrie.build(prompt_tokens, n, max_prefix_len)

    def draft(self, context: list[int], k: int, temperature: float, gen: torch.Generator) -> Draft:
        node, prefix = self.trie.match(context)
        notes = {"matched_prefix": prefix, "matched_length": len(prefix), "trie_nodes": len(self.trie)}
        if node is None:
            return Draft([], [], None, notes | {"pruned_from": 0, "tree": []})
        ids = self.trie.prune(node, k, self.num_draft)
        index = {c: i for i, c in enumerate(ids)}
        tokens = [self.trie.token[c] for c in ids]
        parents = [index.get(self.trie.parent[c], -1) for c in ids]  # the matched node is -1
        base = self.trie.depth[node]
        tree = [
            {"token": t, "parent": p, "depth": self.trie.depth[c] - base, "frequency": self.trie.freq[c]}
            for t, p, c in zip(tokens, parents, ids, strict=True)
        ]
        notes |= {"pruned_from": self.trie.size[node] - 1, "tree": tree}
        return Draft(tokens, parents, None, notes)

    def update(self, context: list[int], emitted: list[int], p: torch.Tensor) -> dict:
        return {}
