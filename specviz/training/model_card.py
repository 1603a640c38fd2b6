"""models/README.md, rendered from the checkpoints themselves so the card never drifts from
the files: ``python -m specviz model-card``."""

import json

import torch

from models.artifacts import sha256
from models.checkpoint import CHECKPOINT_NAMES, checkpoint_path, load_checkpoint
from models.dflash import DFLASH_FILE, load_dflash
from models.distilled import DEFAULT_PATH, load_table
from models.eagle import HEAD_NAMES, MODELS_DIR, load_head
from models.medusa import DEFAULT_PATH as MEDUSA_PATH
from models.medusa import cached_heads
from models.mtp import DEFAULT_PATH as MTP_PATH
from models.mtp import load_mtp
from specviz.core.engine import Generation
from specviz.core.settings import Settings
from specviz.training.distill import build_path

ROLES = {
    "target": "The model being decoded: every page of the app runs speculative decoding against it.",
    "tiny": "The neural draft model for classic speculative sampling against the target (seed 003), "
    "and a second, weaker target for comparison.",
}
SAMPLE = dict(prompt="ROMEO:\n", temperature=0.8, seed=0, max_new_tokens=300)


def command_lines(verb: str, command: str) -> list[str]:
    """'Trained with:' (or built) and the command as a code block."""
    return [f"{verb} with:", "", "```", command, "```", ""]


def distilled_section() -> list[str]:
    """The distilled table's card, from its header and its build sidecar."""
    table = load_table(checkpoint_path("target"))
    m, cfg = table.meta, table.meta["config"]
    build = json.loads(build_path(DEFAULT_PATH).read_text())
    if build["sha256"] != sha256(DEFAULT_PATH):
        raise ValueError(f"{build_path(DEFAULT_PATH).name} describes another build than {DEFAULT_PATH.name}")
    return [
        "## distilled",
        "",
        "The table of the `distilled` and `distilled-tree` drafters: what the target itself predicts after every "
        f"context of up to {cfg['max_context']} characters of the training split (its most frequent argmax, how "
        "often the argmax was that one, and "
        f"the top {cfg['top_k']} characters of its average next-character distribution), for the contexts seen at "
        f"least {cfg['min_count']} times. See `specviz/training/distill.py`.",
        "",
        "| | |",
        "|---|---|",
        f"| contexts | {m['contexts']:,} (from {m['train_chars']:,} training characters) |",
        f"| file | `models/{DEFAULT_PATH.name}`, {build['bytes'] / 1e6:.1f} MB |",
        f"| sha256 | `{build['sha256']}` |",
        f"| distilled from | `models/{m['target_file']}`, sha256 `{m['target_sha256']}` (any other target is refused) |",
        f"| corpus sha256 | `{m['corpus_sha256']}` |",
        f"| build time | {build['build_seconds'] / 60:.1f} min, {build['threads']} thread(s), torch {m['torch']} |",
        "",
        *command_lines("Built", build["command"]),
    ]


def medusa_section() -> list[str]:
    """The Medusa heads' card, from their header (config, training run, validation accuracy)."""
    heads = cached_heads(checkpoint_path("target"), torch.float32, MEDUSA_PATH)  # sha256 and pairing checked
    m, c, tr, val = heads.meta, heads.config, heads.meta["train"], heads.meta["val"]
    n_params = sum(p.numel() for name, p in heads.named_parameters() if not name.startswith("ln_f"))
    acc = ", ".join(f"head {i} (x+{i + 1}): {a:.1%}" for i, a in enumerate(val["head_top1"], 1))
    return [
        "## medusa",
        "",
        f"The {c.n_heads} Medusa heads of the `medusa` drafter (Cai et al., 2024): each a residual block "
        "(u + SiLU(W u + b), W = 0 at init) and a linear layer to the vocabulary (initialised from the target's "
        f"lm_head), on u = ln_f(h) of the frozen target's top-layer feature h (layer {c.feature_layer}). Head i "
        "predicts the character i + 1 steps after h's position. See `models/medusa.py` and `specviz/training/train_medusa.py`.",
        "",
        "| | |",
        "|---|---|",
        f"| trained parameters | {n_params:,} (the target is frozen) |",
        f"| top-1 accuracy on val (last 10%) | {acc}; the target's own next character: {val['target_top1']:.1%} |",
        f"| training | {tr['iterations']} steps of {tr['batch_size']} windows x {tr['block']} characters, "
        f"AdamW lr {tr['lr']}, loss weight {tr['loss_decay']}^(i-1) per head, seed {tr['seed']} |",
        f"| training time | {m['train_seconds'] / 60:.1f} min, {m['threads']} thread(s), torch {m['torch']} "
        f"(validation {m['eval_seconds']:.0f} s) |",
        f"| file | `models/{MEDUSA_PATH.name}`, {MEDUSA_PATH.stat().st_size / 1e6:.1f} MB, sha256 `{sha256(MEDUSA_PATH)}` |",
        f"| trained on | `models/{m['target_file']}`, sha256 `{m['target_sha256']}` (any other target is refused) |",
        f"| corpus sha256 | `{m['corpus_sha256']}` |",
        "",
        *command_lines("Trained", m["command"]),
    ]


def eagle_section() -> list[str]:
    """The EAGLE heads' card, from their headers (models/eagle.py), and the measured acceptance by
    depth in models/eagle_depth.json (``python -m specviz eagle-depth --out models/eagle_depth.json``)."""
    target = load_checkpoint("target")
    out = ["## EAGLE heads", "",
           "One-block draft heads on the target's own features (`models/eagle.py`, drafters `eagle1`, `eagle3`, "
           "`eagle3-tree`; `--eagle-no-ttt` picks the head trained without training-time test). Each is paired with "
           "`models/target.safetensors` by sha256 and refused with any other target. Validation: greedy drafts of 4 "
           "from the end of evenly spaced 128-character windows of the val split against the target's own greedy "
           "continuation (`specviz.training.train_eagle.depth_accuracy`): the share of windows whose first d draft characters "
           "all match, and in brackets that over depth d - 1's.", "",
           "| head | training | time | val acceptance by depth 1..4 (conditional) | file |", "|---|---|---|---|---|"]  # fmt: skip
    commands = []
    for name, file in HEAD_NAMES.items():
        path = MODELS_DIR / file
        if not path.is_file():
            continue
        m = load_head(name, target).meta
        acc = m["val_depth_accuracy"]
        how = f"{m['iterations']} iterations x {m['batch_size']} windows of {m['block']}, TTT steps {m['ttt_steps']}"
        out.append(f"| {name} | {how} | {m['train_seconds'] / 60:.1f} min, {m['threads']} thread | "
                   f"{' / '.join(f'{c:.2f}' for c in acc['cumulative'])} ({' / '.join(f'{c:.2f}' for c in acc['conditional'])}) | "
                   f"{path.stat().st_size / 1e6:.1f} MB, sha256 `{sha256(path)[:16]}…` |")  # fmt: skip
        commands.append(m["command"])
    out += ["", "Trained with:", "", "```", *commands, "```", ""]
    depth = MODELS_DIR / "eagle_depth.json"
    if depth.is_file():
        d = json.loads(depth.read_text())
        out += [f"Acceptance by draft depth in the engine ({d['conditions']}; accepted / tried at depth 1..K):", "",
                "| series | temperature | depth 1..K | tokens per round |", "|---|---|---|---|"]  # fmt: skip
        for temp, series in d["measured"].items():
            for name, m in series.items():
                out.append(
                    f"| {name} | {temp} | {' / '.join(f'{r:.2f}' for r in m['rate'])} | {m['tokens_per_round']:.2f} |"
                )
        out += ["", "```", d["command"], "```", ""]
    return out


def mtp_section() -> list[str]:
    """The MTP modules' card, from their header (models/mtp.py)."""
    if not MTP_PATH.is_file():
        return []
    m = load_mtp(MTP_PATH, load_checkpoint("target")).meta
    acc, D = m["val_depth_accuracy"], len(m["val_depth_accuracy"]["cumulative"])
    return ["## MTP modules", "",
            f"DeepSeek-V3's multi-token prediction as a drafter (`models/mtp.py`, drafter `mtp`): {D} modules, one per "
            "draft depth, each RMSNorm on the previous depth's state and on the embedding of the token k steps on, a "
            "projection from 2C to C and one transformer block, sharing the target's embedding, final norm and "
            "lm_head. DeepSeek trains them with the model (their loss also shapes the trunk); these are trained "
            "afterwards on the frozen target, with the target's own distributions as labels. Paired with "
            "`models/target.safetensors` by sha256 and refused with any other target. Validation as for the EAGLE "
            "heads (`specviz.training.train_mtp.depth_accuracy`, the modules drafting greedily as the drafter does).",
            "", "| | |", "|---|---|",
            f"| training | {m['iterations']} iterations x {m['batch_size']} windows of {m['block']}, "
            f"{m['train_seconds'] / 60:.1f} min, {m['threads']} thread (torch {m['torch']}) |",
            f"| final losses (CE from the target's distribution, by depth) | {m['final_losses']} |",
            f"| val greedy acceptance by depth 1..{D} | {' / '.join(f'{c:.2f}' for c in acc['cumulative'])} |",
            f"| conditional (depth d given d - 1) | {' / '.join(f'{c:.2f}' for c in acc['conditional'])} |",
            f"| file | `models/mtp.safetensors`, {MTP_PATH.stat().st_size / 1e6:.1f} MB, sha256 "
            f"`{sha256(MTP_PATH)[:16]}…` |", "", *command_lines("Trained", m["command"])]  # fmt: skip


# train-dflash --labels: what slots 2..K of the head were trained to predict
LABELS = {"corpus": "the target's distributions at the corpus positions (teacher-forced on the corpus)",
          "target": "the target's distributions along its own greedy continuation from each root (self-distillation)"}  # fmt: skip


def dflash_section() -> list[str]:
    """The parallel (DFlash) head's card, from its header (models/dflash.py)."""
    if not DFLASH_FILE.is_file():
        return []
    head = load_dflash(load_checkpoint("target"))
    m, c = head.meta, head.config
    acc = m["val_slot_accuracy"]
    i = m.get("init")
    init = (f", fine-tuned from the head `{i['path']}` (sha256 `{i['sha256'][:16]}…`: {i['iterations']} iterations, "
            f"{i['train_seconds'] / 60:.1f} min, slots 2..{c.block} on {i['labels']} labels, `{i['command']}`)") if i else ""  # fmt: skip
    return ["## Parallel (DFlash) head", "",
            f"A one-block head that fills {c.block} slots in one pass from the target's features (blocks {list(c.layers)}, "
            "fused), after DFlash (`models/dflash.py`, drafters `dflash` and `dflash-tree`). Paired with "
            "`models/target.safetensors` by sha256 and refused with any other target; float16 on disk. Validation: one "
            f"greedy block from the end of {acc['windows']} evenly spaced 128-character windows of the val split against "
            "the target's own greedy continuation (`specviz.training.train_dflash.slot_accuracy`): the share of windows "
            "whose first d slots all match.", "",
            "| | |", "|---|---|",
            f"| training | {m['iterations']} iterations x {m['batch_size']} windows of {m['block']}, {m['roots']} blocks "
            f"rooted per window |",
            f"| slots 2..{c.block} learnt | {LABELS[m.get('labels', 'corpus')]}{init} |",
            f"| time | {m['train_seconds'] / 60:.1f} min, {m['threads']} thread (torch {m['torch']}) |",
            f"| val acceptance by slot 1..{c.block} | {' / '.join(f'{a:.2f}' for a in acc['cumulative'])} |",
            f"| file | `models/{DFLASH_FILE.name}`, {DFLASH_FILE.stat().st_size / 1e6:.1f} MB, sha256 "
            f"`{sha256(DFLASH_FILE)[:16]}…`, target sha256 `{m['target_sha256'][:16]}…` |", "",
            *command_lines("Trained", m["command"])]  # fmt: skip


def render_card() -> str:
    out = [
        "# Model cards",
        "",
        "Character-level GPTs in nanoGPT's shape (GPT-2 layer names, LayerNorm, GELU, learned absolute "
        "positions, lm_head tied to wte), trained on the CPU on Tiny Shakespeare (1,115,394 characters; "
        "train = first 90%, val = last 10%). Each `.safetensors` file holds the float32 weights, the "
        "raw bigram and trigram counts of the training split, and in its header the config, the "
        "vocabulary and the training metadata below. This file is generated: `python -m specviz model-card`.",
        "",
    ]
    for name in CHECKPOINT_NAMES:
        ck = load_checkpoint(name)
        m, c = ck.meta, ck.config
        ids = ck.tokenizer.encode(SAMPLE["prompt"])
        settings = Settings(
            drafter="none",
            temperature=SAMPLE["temperature"],
            seed=SAMPLE["seed"],
            max_new_tokens=SAMPLE["max_new_tokens"],
        )
        sample = SAMPLE["prompt"] + Generation(ck, ids, settings).run().text
        out += [
            f"## {name}",
            "",
            ROLES.get(name, ""),
            "",
            "| | |",
            "|---|---|",
            f"| parameters | {ck.model.num_params():,} |",
            f"| layers x heads x width | {c.n_layer} x {c.n_head} x {c.n_embd} |",
            f"| context (block_size) | {c.block_size} |",
            f"| vocabulary | {c.vocab_size} characters |",
            f"| train loss | {m['train_loss']:.4f} |",
            f"| val loss | {m['val_loss']:.4f} |",
            f"| iterations | {m['iterations']} |",
            f"| seed | {m['seed']} |",
            f"| training time | {m['train_seconds'] / 60:.1f} min on {m['device']} (torch {m['torch']}) |",
            f"| corpus sha256 | `{m['corpus_sha256']}` |",
            f"| file | `models/{name}.safetensors`, {checkpoint_path(name).stat().st_size / 1e6:.1f} MB |",
            "",
            *command_lines("Trained", m["command"]),
            f"Sample (temperature {SAMPLE['temperature']}, seed {SAMPLE['seed']}, prompt `ROMEO:\\n`):",
            "",
            "```",
            sample,
            "```",
            "",
        ]
    out += distilled_section()
    out += medusa_section()
    out += [
        "Losses are the mean next-character cross-entropy over non-overlapping 256-character windows of each "
        "split (`specviz.training.train.evaluate`); the test suite recomputes the val loss from the corpus.",
        "",
    ]
    out += eagle_section()
    out += mtp_section()
    out += dflash_section()
    return "\n".join(out)
