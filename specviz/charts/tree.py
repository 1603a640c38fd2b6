"""The trie drafter's round, as the paper draws it: the n-gram trie built from the prompt, the
prefix matched at this round, the pruned draft tree, its depth-first flattening (the token row
the target reads in one pass, siblings sharing a position id), the tree attention mask, the path
verification accepted, and the KV cache entries gathered along it.

Tries of a real prompt hold thousands of nodes, so the trie figure shows the path to the matched
node and the most frequent nodes below it, a few levels deep, and says what it left out.
"""

import heapq

import plotly.graph_objects as go

from specviz.charts.distributions import label, label_text
from specviz.charts.figure import MIN_FONT, finish
from specviz.charts.palette import INK, text_on
from specviz.core.record import RoundRecord
from specviz.drafters.base import tree_mask

OTHER, ROOT, PREFIX, DRAFT, ACCEPTED, REJECTED, UNCHECKED = (
    "#CBD5E1", "#374151", "#E69F00", "#0072B2", "#009E73", "#D55E00", "#999999",
)  # fmt: skip
KIND_NAME = {"other": "trie node", "root": "root", "prefix": "matched prefix", "draft": "draft tree (pruned)",
             "accepted": "accepted path"}  # fmt: skip
ARC_TOP = 2.5  # flattening figure: the highest arc, in y units above the row
KIND_COLOUR = {"other": OTHER, "root": ROOT, "prefix": PREFIX, "draft": DRAFT, "accepted": ACCEPTED}


class TrieView:
    """Which trie nodes to draw and where. ``nodes`` is NGramTrie.nodes(); ``tree`` the draft
    notes' tree (depth first, parents as indices into it, -1 = below the matched node)."""

    def __init__(self, nodes: list[dict], matched_prefix: list[int], tree: list[dict], accepted_path: list[int],
                 levels: int, max_nodes: int):  # fmt: skip
        self.nodes = nodes
        kids: dict[int, list[int]] = {nd["id"]: [] for nd in nodes}
        for nd in nodes[1:]:
            kids[nd["parent"]].append(nd["id"])
        # The trie's own depth-first order: most frequent first, ties to the lowest token id.
        self.kids = {i: sorted(c, key=lambda c: (-nodes[c]["frequency"], nodes[c]["token"])) for i, c in kids.items()}
        by_token = {i: {nodes[c]["token"]: c for c in cs} for i, cs in self.kids.items()}

        self.prefix_ids = [0]
        for t in matched_prefix:
            self.prefix_ids.append(by_token[self.prefix_ids[-1]][t])
        self.focus = self.prefix_ids[-1]
        self.draft_ids = []  # trie id of each draft node; siblings are distinct tokens
        for d in tree:
            parent = self.focus if d["parent"] == -1 else self.draft_ids[d["parent"]]
            self.draft_ids.append(by_token[parent][d["token"]])
        self.accepted_ids = [self.draft_ids[i] for i in accepted_path]

        # Shown: the path, the draft, then the most frequent nodes under the match, best first.
        shown = dict.fromkeys(self.prefix_ids + self.draft_ids)
        base = nodes[self.focus]["depth"]
        heap = [(-nodes[c]["frequency"], c) for c in self.kids[self.focus]]
        heapq.heapify(heap)
        while heap and len(shown) < max_nodes:
            _, c = heapq.heappop(heap)
            shown[c] = None
            if nodes[c]["depth"] - base < levels:
                for g in self.kids[c]:
                    heapq.heappush(heap, (-nodes[g]["frequency"], g))
        self.shown = set(shown)
        self.below = self._subtree_size(self.focus) - 1

    def _subtree_size(self, node: int) -> int:
        size, stack = 0, [node]
        while stack:
            n = stack.pop()
            size += 1
            stack.extend(self.kids[n])
        return size

    def layout(self) -> dict[int, tuple[int, float]]:
        """Layered layout: x = depth, y = leaf order (parents centred over their shown children)."""
        pos: dict[int, tuple[int, float]] = {}
        leaf = 0
        stack = [(0, False)]
        while stack:  # iterative post-order, so deep chains do not hit the recursion limit
            n, done = stack.pop()
            kids = [c for c in self.kids[n] if c in self.shown]
            if done or not kids:
                if kids:
                    y = (pos[kids[0]][1] + pos[kids[-1]][1]) / 2
                else:
                    y, leaf = float(leaf), leaf + 1
                pos[n] = (self.nodes[n]["depth"], y)
                continue
            stack.append((n, True))
            stack.extend((c, False) for c in reversed(kids))
        return pos

    def kind(self, n: int) -> str:
        if n == 0:
            return "root"
        if n in self.accepted_ids:
            return "accepted"
        if n in self.draft_ids:
            return "draft"
        return "prefix" if n in self.prefix_ids else "other"


def trie_figure(nodes: list[dict], vocab: list[str], matched_prefix: list[int], tree: list[dict],
                accepted_path: list[int] = (), levels: int = 6, max_nodes: int = 80) -> go.Figure:  # fmt: skip
    """The trie around the match: root, matched prefix, draft tree and accepted path coloured;
    each node shows its character, its frequency beside it. ``levels`` and ``max_nodes`` bound
    what else is drawn below the matched node; the title says what was cut."""
    v = TrieView(nodes, matched_prefix, tree, list(accepted_path), levels, max_nodes)
    pos = v.layout()
    fig = go.Figure()
    for kind in ("other", "prefix", "draft", "accepted"):  # edges, drawn under the nodes
        xs, ys = [], []
        for n in pos:
            if n and v.kind(n) == kind:
                (x0, y0), (x1, y1) = pos[nodes[n]["parent"]], pos[n]
                xs += [x0, x1, None]
                ys += [y0, y1, None]
        wide = kind in ("accepted", "prefix")
        fig.add_scatter(x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=False,
                        line=dict(color=KIND_COLOUR[kind], width=3 if wide else 1.5))  # fmt: skip
    for kind in ("root", "other", "prefix", "draft", "accepted"):
        ids = [n for n in pos if v.kind(n) == kind]
        if not ids:
            continue
        hidden = [len([c for c in v.kids[n] if c not in v.shown]) for n in ids]
        text = ["root" if n == 0 else label(vocab, nodes[n]["token"]) for n in ids]
        fig.add_scatter(
            x=[pos[n][0] for n in ids], y=[pos[n][1] for n in ids], mode="markers+text", name=KIND_NAME[kind],
            text=text, textfont=dict(color=text_on(KIND_COLOUR[kind]), size=14),  # >= 14 px: read from the back of a room
            marker=dict(size=[32 if n == 0 else 26 for n in ids], color=KIND_COLOUR[kind], symbol="circle", line=dict(width=1, color=INK)),
            customdata=[[nodes[n]["id"], nodes[n]["frequency"], nodes[n]["depth"], h] for n, h in zip(ids, hidden, strict=True)],
            hovertemplate="<b>%{text}</b>  frequency %{customdata[1]}<br>depth %{customdata[2]}, node %{customdata[0]}"
            "<br>%{customdata[3]} children not drawn<extra>" + KIND_NAME[kind] + "</extra>",
        )  # fmt: skip
    shown = [n for n in pos if n]
    fig.add_scatter(x=[pos[n][0] + 0.12 for n in shown], y=[pos[n][1] - 0.3 for n in shown], mode="text",
                    hoverinfo="skip", text=[str(nodes[n]["frequency"]) for n in shown], textposition="top right",
                    textfont=dict(size=MIN_FONT, color="#6B7280"), name="frequency", showlegend=False)  # fmt: skip

    leaves = int(max(y for _, y in pos.values())) + 1  # leaves sit at y = 0, 1, 2, ...
    where = (
        f"the matched prefix {label_text(vocab, matched_prefix)!r}"
        if matched_prefix
        else "the root (no prefix matched)"
    )
    title = (f"N-gram trie: {len(nodes) - 1:,} nodes; {v.below:,} below {where}<br><sub>Drawn: {len(pos) - 1} nodes, "
             f"the most frequent up to {levels} levels below {'the match' if matched_prefix else 'the root'} "
             f"(at most {max_nodes});<br>"
             f"{len(nodes) - len(pos):,} not drawn. Grey numbers: frequencies (keys through the node).</sub>")  # fmt: skip
    depth = max(x for x, _ in pos.values())
    fig.update_layout(title=title, height=min(1400, max(420, 26 * leaves + 160)), margin=dict(l=10, r=10, t=95, b=85),
                      legend=dict(orientation="h", yref="container", y=0, yanchor="bottom"), plot_bgcolor="white",
                      xaxis=dict(title="depth in the trie", dtick=1, range=[-0.5, depth + 0.8], zeroline=False),
                      yaxis=dict(visible=False, range=[leaves - 0.4, -0.9]))  # reversed: first leaf on top  # fmt: skip
    return finish(fig)


def _slot_labels(r: RoundRecord, vocab: list[str], root_token: int) -> list[str]:
    """Slot 0 is the root (the last context token), slot i + 1 is draft node i."""
    return [label(vocab, t) for t in [root_token] + r.draft_tokens]


def node_status(r: RoundRecord) -> list[str]:
    """Per draft node: accepted, rejected (checked and refused) or unchecked (never looked at:
    an ancestor was rejected, or a sibling was accepted first)."""
    checked = {p.node: p.accepted for p in r.positions}
    return [
        "accepted" if checked.get(i) else "rejected" if i in checked else "unchecked"
        for i in range(len(r.draft_tokens))
    ]


def flattening_figure(r: RoundRecord, vocab: list[str], root_token: int) -> go.Figure:
    """The depth-first token row sent to the target in one forward pass, each cell with its
    position id (siblings share one: the cache position is kv_before + depth), and an arc from
    each node to its parent, so the tree can be read off the flat row."""
    labels, status = _slot_labels(r, vocab, root_token), ["root"] + node_status(r)
    colour = {"root": ROOT, "accepted": ACCEPTED, "rejected": REJECTED, "unchecked": UNCHECKED}
    on_path = {0} | {i + 1 for i in r.accepted_path}
    fig = go.Figure()
    for i, parent in enumerate(r.draft_parents):
        a, b = parent + 1, i + 1
        peak = min(ARC_TOP, 0.3 + 0.25 * (b - a))  # a quadratic Bezier peaks halfway to its control point
        hot = a in on_path and b in on_path
        fig.add_shape(type="path", path=f"M {a},0.25 Q {(a + b) / 2},{0.25 + 2 * peak} {b},0.25", layer="below",
                      line=dict(color=ACCEPTED if hot else "#999999", width=3 if hot else 1))  # fmt: skip
    for kind in ("root", "accepted", "rejected", "unchecked"):
        ids = [i for i, s in enumerate(status) if s == kind]
        if not ids:
            continue
        fig.add_scatter(
            x=ids, y=[0] * len(ids), mode="markers+text", text=[labels[i] for i in ids], name=kind,
            marker=dict(symbol="square", size=30, color=colour[kind]), textfont=dict(color=text_on(colour[kind]), size=14),
            customdata=[[r.draft_positions[i], i - 1] for i in ids],
            hovertemplate="<b>%{text}</b> position id %{customdata[0]}, draft node %{customdata[1]}<extra>" + kind + "</extra>",
        )  # fmt: skip
    n = len(labels)
    ticks = [str(p) for p in r.draft_positions]
    extra = (f"correction {label(vocab, r.correction)!r}" if r.correction is not None
             else f"bonus {label(vocab, r.bonus)!r}")  # fmt: skip
    # Short lines: at 1024 px the chart is ~420 px wide, and plotly does not wrap a title.
    title = (f"Depth-first flattening: root + {n - 1} drafted, one pass<br><sub>siblings share a position id; "
             f"accepted {r.n_accepted} along the path,<br>then the target's own {extra}; arcs join each token to its "
             "parent</sub>")  # fmt: skip
    fig.update_layout(title=title, height=320, margin=dict(l=10, r=10, t=95, b=10), plot_bgcolor="white",
                      legend=dict(orientation="h", y=-0.3), xaxis=dict(tickvals=list(range(n)), ticktext=ticks,
                      tickangle=-90 if n > 30 else 0, range=[-0.7, n - 0.3], showgrid=False,
                      title="position id (kv_before + depth)"),
                      yaxis=dict(visible=False, range=[-0.6, ARC_TOP + 0.5]))  # fmt: skip
    return finish(fig)


def attention_mask(r: RoundRecord) -> list[list[bool]]:
    """The round's mask over [root + nodes]. A draft that came out a chain (one branch, or
    none) is verified with the plain causal mask and records None; rebuild it from the parents."""
    return r.tree_mask if r.tree_mask is not None else tree_mask(r.draft_parents).tolist()


def mask_figure(r: RoundRecord, vocab: list[str], root_token: int) -> go.Figure:
    """The tree attention mask: row i may attend to column j (1) iff j is i or an ancestor.
    Rows are labelled with token and position id; the accepted path's rows are outlined."""
    z = [[int(v) for v in row] for row in attention_mask(r)]
    labels = _slot_labels(r, vocab, root_token)
    n = len(z)
    rows = [f"{i}: {c}  pos {p}" for i, (c, p) in enumerate(zip(labels, r.draft_positions, strict=True))]
    on_path = [0] + [i + 1 for i in r.accepted_path]
    rows = [("✓ " if i in on_path else "") + t for i, t in enumerate(rows)]
    fig = go.Figure(go.Heatmap(z=z, x=list(range(n)), y=list(range(n)), zmin=0, zmax=1, showscale=False, xgap=1, ygap=1,
                               colorscale=[[0, "#F7F7F7"], [1, DRAFT]], customdata=[[rows[i]] * n for i in range(n)],
                               hovertemplate="row %{customdata}<br>column %{x}: %{z}<extra></extra>"))  # fmt: skip
    for i in on_path:
        fig.add_shape(type="rect", x0=-0.5, x1=n - 0.5, y0=i - 0.5, y1=i + 0.5, line=dict(color=ACCEPTED, width=3),
                      name="accepted path")  # fmt: skip
    font = MIN_FONT
    # its title 14 px under the figure's top: anchored at the top itself, its first line rose 5 px out of it
    height = min(1000, max(340, 18 * n + 175))
    kind = "Tree attention mask" if r.tree_mask is not None else "Causal mask (this draft is a chain)"
    fig.update_layout(title=dict(text=f"{kind}<br><sub>blue: may attend; ✓ rows: accepted path</sub>",
                                 yref="container", y=1 - 14 / height, yanchor="top"),  # above the top ticks
                      height=height, margin=dict(l=10, r=10, t=130, b=10),
                      xaxis=dict(tickvals=list(range(n)), ticktext=labels, side="top", tickfont=dict(size=font)),
                      yaxis=dict(tickvals=list(range(n)), ticktext=rows, autorange="reversed", tickfont=dict(size=font)))  # fmt: skip
    return finish(fig)


def kv_gather_figure(r: RoundRecord, vocab: list[str], root_token: int) -> go.Figure:
    """Top row: the cache after verification (root at kv_before, then one entry per drafted
    token). Bottom row: after the gather, the root and the accepted path, moved together."""
    labels = _slot_labels(r, vocab, root_token)
    kept = r.kv_kept  # the root, then the accepted path
    written = list(range(r.kv_before, r.kv_after_verify))
    fig = go.Figure()
    for old, new in zip(kept, range(r.kv_before, r.kv_before + len(kept)), strict=True):
        fig.add_shape(type="line", x0=old, y0=0.85, x1=new, y1=0.15, line=dict(color=ACCEPTED, width=2), layer="below")
    for kind, ids in (("kept", [i for i in written if i in kept]), ("dropped", [i for i in written if i not in kept])):
        if ids:
            fig.add_scatter(x=ids, y=[1] * len(ids), mode="markers+text", name=f"after verify: {kind}",
                            text=[labels[i - r.kv_before] for i in ids], textfont=dict(color="white", size=14),
                            marker=dict(symbol="square", size=26, color=ACCEPTED if kind == "kept" else REJECTED),
                            hovertemplate="cache index %{x}<extra>" + kind + "</extra>")  # fmt: skip
    after = list(range(r.kv_before, r.kv_before + len(kept)))
    fig.add_scatter(x=after, y=[0] * len(after), mode="markers+text", name="after gather",
                    text=[labels[i - r.kv_before] for i in kept], textfont=dict(color="white", size=14),
                    marker=dict(symbol="square", size=26, color=ACCEPTED), hovertemplate="cache index %{x}<extra>kept</extra>")  # fmt: skip
    how = "gather" if r.tree_mask is not None else "trim"
    title = (f"KV cache: verification wrote {len(written)} entries ({r.kv_before}…{r.kv_after_verify - 1})<br><sub>"
             f"one per token of the row above; the {how} keeps the root and the {r.n_accepted} accepted → "
             f"{r.kv_after_trim} entries</sub>")  # fmt: skip
    fig.update_layout(title=title, height=300, margin=dict(l=10, r=10, t=85, b=10), plot_bgcolor="white",
                      legend=dict(orientation="h", y=-0.4),
                      xaxis=dict(title=f"cache index (0…{r.kv_before - 1}: earlier context, kept)",
                      range=[r.kv_before - 1.5, r.kv_after_verify], dtick=1 if len(written) <= 24 else 5),
                      yaxis=dict(tickvals=[0, 1], ticktext=["after gather", "after verify"], range=[-0.5, 1.5]))  # fmt: skip
    return finish(fig)
