"""The parallel (DFlash) head (models/dflash.py), its training (specviz/training/train_dflash.py) and its
drafters (specviz/drafters/dflash.py, dflash_tree.py). The engine's tests cover both drafters through the
registry (greedy at K = 1, 4, 8 and the KV cache after every round); here: greedy over 300 characters past
block_size, the one-pass block equal to the training forward, the tree's best-first rule, the file's pairing.
Exactness at T = 0.5 and 1: tests/statistical/test_exactness_real_target.py."""

import pytest
import torch
from conftest import GREEDY_TEXT, assert_training_resumes

from models.dflash import DFlashConfig, DFlashHead, block_mask, load_dflash, save_dflash
from models.eagle import EagleError
from specviz.cli import main as cli
from specviz.core.engine import Generation
from specviz.core.sampling import probs_from_logits, scale_probs
from specviz.core.settings import Settings
from specviz.drafters.dflash import DFlashDrafter
from specviz.drafters.dflash_tree import DFlashTreeDrafter
from specviz.kernels.attention import attn_bias
from specviz.kernels.cached_model import CachedModel
from specviz.teaching.presets import PRESETS
from specviz.training.train_dflash import continuation_labels

TEXT = "ROMEO:\nBut soft, what light through yonder window breaks?\nIt is the east, and Juliet is the sun.\n"
LONG = 300  # characters generated: the window jumps (block_size 256) at least once


def random_head(target, block=8, seed=0) -> DFlashHead:
    torch.manual_seed(seed)
    head = DFlashHead(DFlashConfig(3, (0, 1, 3), 256, 4, 65, 1, block))
    return head.to(target.model.lm_head.weight.dtype).attach(target.model)


def test_block_mask_sees_the_context_up_to_its_root_and_its_own_block():
    m = block_mask(6, torch.tensor([1, 4]), 3)  # (6, 6 + 6)
    assert m.shape == (6, 12)
    assert m[:3, :6].tolist() == [[True, True, False, False, False, False]] * 3
    assert m[3:, :6].tolist() == [[True] * 5 + [False]] * 3
    assert m[:3, 6:9].all() and not m[:3, 9:].any() and m[3:, 9:].all() and not m[3:, 6:9].any()


@torch.no_grad()
def test_the_one_pass_block_equals_the_training_forward(target64):
    """BlockCache feeds new entries and fills the mask rows in one lean pass; the same numbers as
    DFlashHead.block_hidden on the whole context (float64), over two rounds and a re-asked context."""
    head = random_head(target64)
    drafter = DFlashDrafter(head, CachedModel(target64.model))
    context = target64.tokenizer.encode(TEXT)
    for n in (40, 55, 55, len(context)):  # 55 twice: a shadow re-draft feeds nothing
        probs, notes = drafter.slots(context[:n], 8)
        feats = target64.model.features(torch.tensor([context[: n - 1]]), head.config.layers)
        h, hm = head.block_hidden(feats, torch.tensor([context[1:n]]), torch.tensor([n - 2]))
        ref = probs_from_logits(head.logits(torch.cat([h[0, -1:], hm[0, 0]])), 1.0)  # (8, V)
        assert probs.shape == (8, 65) and torch.allclose(probs, ref, atol=1e-10), n
        assert notes["passes"] == 1 and notes["mask_rows"] == 7
    assert drafter.cache.fed == len(context) - 1  # each context entry fed once
    again, notes = drafter.slots(context, 1)  # a one-slot shadow on the same context: no pass at all
    assert torch.allclose(again[0], probs[0], atol=1e-12) and notes["entries_fed"] == 0 and notes["mask_rows"] == 0


def test_the_kept_block_bias_is_attn_bias_of_the_block_pattern(target64):
    """BlockCache.bias hands out views of a buffer kept per (T, M): each equals the mask built afresh, for any
    context length, also past the buffer's first width (rebuilt) and after a longer one."""
    cache = DFlashDrafter(random_head(target64), CachedModel(target64.model)).cache
    for n, T, M in [
        (0, 1, 3),
        (40, 2, 3),
        (7, 2, 3),
        (12, 0, 7),
        (400, 2, 3),
        (50, 2, 3),
        (9, 5, 1),
        (0, 40, 7),
        (3, 120, 7),
    ]:  # the last two: a prefill's, not kept
        new = torch.zeros(T + M, T + M, dtype=torch.bool)
        new[:T, :T] = torch.ones(T, T, dtype=torch.bool).tril()
        new[T:] = True
        got = cache.bias(n, T, M)
        assert got.shape == (T + M, n + T + M) and got.stride(1) == 1
        assert torch.equal(got, attn_bias(n, new, cache.target.dtype)), (n, T, M)
    assert max(T for T, _ in cache._bias) <= 9  # only an ordinary round's few entries are kept


@torch.no_grad()
def test_q_rows_are_the_slot_distributions_and_k_is_capped(target64):
    head = random_head(target64, block=4)
    drafter = DFlashDrafter(head, CachedModel(target64.model))
    context = target64.tokenizer.encode(TEXT)
    draft = drafter.draft(context, 8, 0.7, torch.Generator().manual_seed(2))
    probs, _ = drafter.slots(context, 8)
    assert len(draft.tokens) == 4 and draft.is_chain  # no slot past the head's block
    for s, x in enumerate(draft.tokens):
        assert torch.allclose(draft.q[s], scale_probs(probs[s], 0.7), atol=1e-12) and draft.q[s][x] > 0
    slots = draft.notes["slots"]
    assert slots["token"] == draft.tokens and len(slots["top"]) == len(slots["p"]) == 4
    for s, (ranked, p) in enumerate(zip(slots["top"], slots["p"], strict=True)):  # each slot's top, best first
        assert ranked == probs[s].topk(4).indices.tolist() and p == sorted(p, reverse=True)
        assert p[0] == round(float(probs[s].max()), 4) and slots["q"][s] == round(float(draft.q[s][draft.tokens[s]]), 4)
    assert len(drafter.draft(context, 2, 0.7, torch.Generator()).tokens) == 2
    greedy = drafter.draft(context, 8, 0.0, torch.Generator())  # each slot's argmax, one-hot q (None)
    assert greedy.q is None and greedy.tokens == probs.argmax(-1).tolist() == greedy.notes["slots"]["token"]
    assert greedy.notes["slots"]["q"] == [1.0] * 4


@torch.no_grad()
@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_ddtree_keeps_the_best_paths_by_slot_probability_product(target64, temperature):
    drafter = DFlashTreeDrafter(load_dflash(target64), CachedModel(target64.model), nodes=12)
    context = target64.tokenizer.encode(TEXT)
    draft = drafter.draft(context, 3, temperature, torch.Generator())
    probs, _ = drafter.slots(context, 3)
    q = probs if temperature == 0 else torch.stack([scale_probs(r, temperature) for r in probs])
    # Every path of depth <= 3 through each slot's top 8 (CHILDREN), scored by the product: the tree is the best 12.
    top = [q[d].topk(8).indices.tolist() for d in range(3)]
    one = [q[0, a] for a in top[0]]
    two = [s * q[1, b] for s in one for b in top[1]]
    best = sorted(float(s) for s in one + two + [s * q[2, c] for s in two for c in top[2]])[-12:]
    scores = sorted(n["score"] for n in draft.notes["tree"])
    assert len(draft.tokens) == 12 and draft.q is None and max(draft.depths) <= 3
    assert scores == pytest.approx(best, rel=1e-9)
    for i, p in enumerate(draft.parents):  # a child's score never exceeds its parent's
        assert p < i and (p < 0 or draft.notes["tree"][p]["score"] >= draft.notes["tree"][i]["score"])


@pytest.fixture(scope="module")
def long_greedy(target64):
    prompt = target64.tokenizer.encode(GREEDY_TEXT)
    run = Generation(target64, prompt, Settings(drafter="none", temperature=0, max_new_tokens=LONG)).run()
    assert len(prompt) + LONG > target64.config.block_size + 200
    return prompt, run.tokens


@pytest.mark.parametrize("drafter, verification", [("dflash", "lossless"), ("dflash-tree", "lossless"),
                                                   ("dflash-tree", "traversal")])  # fmt: skip
def test_greedy_300_characters_past_block_size(target64, long_greedy, drafter, verification):
    prompt, tokens = long_greedy
    for k in (1, 4, 8):
        s = Settings(drafter=drafter, k=k, temperature=0, max_new_tokens=LONG, verification=verification)
        run = Generation(target64, prompt, s).run()
        assert run.tokens == tokens, f"{drafter} K={k} diverged from greedy"
        assert run.summary()["accepted"] > 0 and sum(r.reprefill for r in run.rounds) >= 2


def test_save_load_pairing_and_sha256(target, tiny, tmp_path):
    head = random_head(target, block=3)
    path = tmp_path / "d.safetensors"
    save_dflash(path, head, target.path, {"command": "test"})
    loaded = load_dflash(target, path)
    assert loaded.config.block == 3
    for k, v in head.state_dict().items():
        assert torch.equal(loaded.state_dict()[k], v.half().float()), k  # float16 on disk
    with pytest.raises(EagleError, match="another target.*train-dflash") as e:
        load_dflash(tiny, path)
    assert "\n" not in str(e.value)
    (tmp_path / "SHA256SUMS").write_text(f"{'0' * 64}  d.safetensors\n")
    with pytest.raises(EagleError, match="sha256"):
        load_dflash(target, path)


def test_the_shipped_head_is_paired_with_the_target(target):
    head = load_dflash(target)
    assert head.config.block == 8 and head.meta["val_slot_accuracy"]["cumulative"][0] > 0.5


@pytest.mark.parametrize("labels", [[], ["--labels", "target", "--init", "models/dflash.safetensors", "--slots", "8"]])
def test_train_dflash_resumes_where_it_stopped(tmp_path, monkeypatch, labels):
    """An interrupted run continued from --resume-dir ends with the same head as an uninterrupted one, with
    corpus labels from fresh weights and with the target's own continuations from the shipped head (the
    resumed run computes its labels again in its own --resume-dir: the same labels)."""
    corpus = tmp_path / "text.txt"
    corpus.write_text("".join(p.text for p in PRESETS) * 2)
    args = ["train-dflash", "--data", str(corpus), "--max-iters", "4", "--eval-interval", "2", "--batch-size", "2",
            "--block", "24", "--roots", "4", "--slots", "4", "--eval-windows", "4", *labels]  # fmt: skip
    assert_training_resumes(args, tmp_path, monkeypatch, "dflash-*.pt")
    if labels:  # the labels are kept, keyed by the target's sha256, for the next run
        assert len(list((tmp_path / "rb").glob("labels-dflash-*.pt"))) == 1


def test_continuation_labels_are_the_targets_greedy_continuation(target64):
    """Row j - 1 of a root's labels is the target's distribution after the root and its own greedy y_1..y_j,
    as plain decoding from that prefix computes it, for roots anywhere in the window, all roots in one batch."""
    model = target64.model
    x = torch.randint(65, (2, 40), generator=torch.Generator().manual_seed(3))
    roots = torch.tensor([0, 7, 31])
    labels = continuation_labels(model, x, roots, 5)  # (2, 3, 4, V)
    assert labels.shape == (2, 3, 4, 65)
    for b in range(2):
        for i, r in enumerate(roots.tolist()):
            seq = x[b : b + 1, : r + 2]  # up to the root's token x_{r+1}
            for j in range(5):
                logits, _ = model(seq, torch.arange(seq.size(1)))
                if j:
                    torch.testing.assert_close(
                        labels[b, i, j - 1].double(), logits[0, -1].softmax(-1), atol=1e-3, rtol=0
                    )
                seq = torch.cat([seq, logits[:, -1:].argmax(-1)], dim=1)


def test_train_dflash_bad_input_is_one_line(capsys):
    assert cli.main(["train-dflash", "--slots", "0", "--out", "/tmp/x.safetensors"]) == 2
    assert cli.main(["train-dflash", "--block", "999", "--out", "/tmp/x.safetensors"]) == 2
    assert cli.main(["train-dflash", "--roots", "500", "--out", "/tmp/x.safetensors"]) == 2
    assert cli.main(["train-dflash", "--init", "/nonexistent.safetensors", "--out", "/tmp/x.safetensors"]) == 2
    assert (
        cli.main(["train-dflash", "--init", "models/dflash.safetensors", "--slots", "4", "--out", "/tmp/x.safetensors"])
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 5 and all(line.startswith("error:") for line in err)


def test_the_slots_panel_chart_from_a_real_round(target, tiny):
    """The step page's chart: one group per slot, each slot's verdict from the round's accepted path."""
    import plotly.graph_objects as go

    from specviz.charts.parallel import slot_verdicts, slots_figure

    for drafter in ("dflash", "dflash-tree"):
        s = Settings(drafter=drafter, k=6, temperature=0.8, max_new_tokens=30, seed=1)
        run = Generation(target, target.tokenizer.encode(TEXT), s, tiny.model).run()
        drafted = [r for r in run.rounds if r.draft_notes.get("slots")]
        assert drafted and any(r.accepted_path for r in drafted)
        for r in drafted:
            fig = slots_figure(r.draft_notes, len(r.accepted_path), target.tokenizer.chars)
            go.Figure(fig.to_dict())  # valid plotly
            n = len(r.draft_notes["slots"]["top"])  # 6, or fewer where the run had less room left
            assert 1 <= n <= 6 and [a["x"] for a in fig.layout.annotations] == [f"slot {i + 1}" for i in range(n)]
            verdicts = [a["text"].split("<b>")[1].removesuffix("</b>") for a in fig.layout.annotations]
            assert verdicts == slot_verdicts(n, len(r.accepted_path), True)
    for T, verb in ((0.0, "took"), (0.8, "drew")):  # a chain's slots: their top-1 at T = 0, drawn above it
        s = Settings(drafter="dflash", k=4, temperature=T, max_new_tokens=12, seed=1)
        r = next(r for r in Generation(target, target.tokenizer.encode(TEXT), s, tiny.model).run().rounds
                 if r.draft_notes.get("slots"))  # fmt: skip
        fig = slots_figure(r.draft_notes, len(r.accepted_path), target.tokenizer.chars)
        assert all(a["text"].startswith(f"{verb} ") for a in fig.layout.annotations), T
    assert slot_verdicts(4, 2, True) == ["accepted", "accepted", "rejected", "not checked"]
    assert slot_verdicts(2, 2, True) == ["accepted", "accepted"]


def test_draft_cost_per_round_from_bench_rows():
    """Per round, in baseline passes: draft time over rounds over the baseline's time per forward pass, for
    the network chain drafters read from the registry (dflash among them; trees and n-gram tables not)."""
    from specviz.bench.shootout import draft_cost_per_round, network_chains
    from specviz.charts.parallel import cost_by_k_figure

    assert {"neural", "eagle3", "dflash"} <= set(network_chains())
    assert not {"dflash-tree", "trigram", "medusa", "none"} & set(network_chains())

    def row(drafter, k, draft_s, verify_s, forwards):
        return {
            "impl": "specviz",
            "drafter": drafter,
            "k": k,
            "temperature": 0.0,
            "k_auto": False,
            "verification": "lossless",
            "draft_s": draft_s,
            "verify_s": verify_s,
            "target_forwards": forwards,
        }

    rows = [
        row("none", 1, 0.0, 2.0, 100),
        row("none", 4, 0.0, 2.2, 110),
        row("dflash", 1, 0.5, 1.0, 50),
        row("dflash", 4, 0.3, 1.0, 30),
        row("neural", 4, 2.0, 1.0, 40),
        row("trigram", 4, 0.1, 1.0, 30),
    ]
    costs = draft_cost_per_round(rows)
    assert costs == {"dflash": {1: pytest.approx(0.5), 4: pytest.approx(0.5)}, "neural": {4: pytest.approx(2.5)}}
    import plotly.graph_objects as go

    fig = cost_by_k_figure(costs)
    go.Figure(fig.to_dict())
    assert [t.name for t in fig.data] == ["dflash", "neural"] and list(fig.data[0].y) == [0.5, 0.5]


def test_bench_drafters_flag_refuses_an_unknown_name_in_one_line(capsys):
    assert cli.main(["bench", "--quick", "--drafters", "dflash,nope", "--no-transformers"]) == 2
    assert cli.main(["bench", "--quick", "--drafters", ",", "--no-transformers"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("error:") and "unknown drafter" in line for line in err)


def test_the_card_says_what_the_shipped_heads_slots_learnt(target):
    """models/README.md's DFlash section is read from the head's header: its labels and, for a fine-tuned
    head, the file it began from (its sha256 and run)."""
    from specviz.training.model_card import LABELS, dflash_section

    meta = load_dflash(target).meta
    text = "\n".join(dflash_section())
    assert LABELS[meta["labels"]] in text
    if meta.get("init"):
        assert meta["init"]["sha256"][:16] in text and meta["init"]["command"] in text
