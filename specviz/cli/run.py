"""The run commands: info, generate, replay and exactness."""

import importlib.util
import json
import sys
from pathlib import Path

import torch
from tqdm import tqdm

from models.checkpoint import CHECKPOINT_NAMES, atomic_write, checkpoint_path, load_checkpoint
from specviz.adaptive.policy import AUTO_K_MAX
from specviz.cli.errors import CLIError, checked
from specviz.cli.flags import cost_curve, prepare
from specviz.core.engine import Generation
from specviz.core.outputs import writable_file
from specviz.teaching.exactness import ALPHA, MAX_SAMPLES, run_exactness, verdict


def cmd_info(args) -> None:
    rows = []
    for name in CHECKPOINT_NAMES:
        ckpt = load_checkpoint(name)
        rows.append(
            {
                "name": name,
                "path": str(ckpt.path),
                "config": vars(ckpt.config),
                "parameters": ckpt.model.num_params(),
                "train_loss": ckpt.meta.get("train_loss"),
                "val_loss": ckpt.meta.get("val_loss"),
                "iterations": ckpt.meta.get("iterations"),
                "file_size_bytes": checkpoint_path(name).stat().st_size,
            }
        )
    real = llm_rows()
    if args.json:
        print(json.dumps(rows + real, indent=2))
        return
    for r in rows:
        c = r["config"]
        print(
            f"{r['name']:<7} {r['parameters']:>9,} params  {c['n_layer']} layers x {c['n_embd']} wide, "
            f"{c['n_head']} heads, block_size {c['block_size']}, vocab {c['vocab_size']}  "
            f"train {r['train_loss']:.4f}  val {r['val_loss']:.4f}  {r['file_size_bytes'] / 1e6:.1f} MB"
        )
    for r in real:
        if "error" in r:
            print(f"{r['name']}: cannot run: {r['error']}")
            continue
        c = r["config"]
        print(f"{r['name']}  {r['parameters']:>11,} params  {c['model_type']}, {c['n_layer']} layers x {c['n_embd']} "
              f"wide, vocab {c['vocab_size']}, context {c['block_size']}  {r['file_size_bytes'] / 1e6:.1f} MB  "
              f"(--model {r['name']})")  # fmt: skip


def llm_rows() -> list[dict]:
    """The real models found here: SmolLM2 (when its package is installed) and the hub cache's models, each
    checked from its files as --model would (specviz/llm/load.py), with the reason where one cannot run."""
    from specviz.llm import load as llm

    names = [llm.SMOLLM2] if importlib.util.find_spec(llm.SMOLLM2_PACKAGE) else []
    try:
        from huggingface_hub import scan_cache_dir

        names += sorted(r.repo_id for r in scan_cache_dir().repos if r.repo_type == "model")
    except Exception:  # noqa: BLE001, S110 (no cache folder yet: nothing to list)
        pass
    rows = []
    for name in names:
        try:
            src = llm.inspect(name, available=1 << 62)  # listed whatever the memory; --model checks it
            rows.append({"name": name, "kind": "real model", "path": str(src.folder / (src.gguf_file or "")),
                         "config": vars(src.config), "parameters": src.parameters, "file_size_bytes": src.file_bytes})  # fmt: skip
        except llm.LLMError as e:
            rows.append({"name": name, "kind": "real model", "error": str(e)})
    return rows


def cmd_generate(args) -> None:
    target, prompt, settings, draft_model = prepare(args, args.max_new_tokens)
    gen = Generation(target, prompt, settings, draft_model, costs=cost_curve(args.costs, target, settings.k_auto))
    with tqdm(total=settings.max_new_tokens, desc="generating", unit="tok", disable=None, leave=False) as bar:
        trace = gen.run(lambda n: bar.update(n - bar.n))
    summary = trace.summary()
    if args.json:
        out = trace.to_dict()
        print(
            json.dumps(
                {k: out[k] for k in ("text", "tokens", "target_forwards", "mean_accepted", "acceptance_rate")} | out
            )
        )
        return
    print(args.prompt + target.tokenizer.decode(trace.tokens))  # decode: a BPE piece may hold part of a character
    depth = settings.k  # the drafter may cap adaptive K's
    if gen.adaptive is not None:
        depth = f"auto (at most {gen.adaptive.k_max}; verify costs: {gen.adaptive.curve.source})"
    print(
        f"-- {summary['tokens']} tokens in {summary['target_forwards']} target forward passes "
        f"({summary['mean_accepted']:.2f} per pass), acceptance rate {summary['acceptance_rate']:.1%}, "
        f"drafter {settings.drafter}, K={depth}, T={settings.temperature}",
        file=sys.stderr,
    )


def cmd_replay(args) -> None:
    from specviz.teaching.replay import replay_html

    out = checked(writable_file, args.out)  # before any work
    target, prompt, settings, draft_model = prepare(args, args.max_new_tokens)
    costs = cost_curve(args.costs, target, settings.k_auto)
    with tqdm(total=settings.max_new_tokens, desc="generating", unit="tok", disable=None, leave=False) as bar:
        trace = Generation(target, prompt, settings, draft_model, costs=costs).run(lambda n: bar.update(n - bar.n))
    with tqdm(desc="charts", unit="round", disable=None, leave=False) as bar:

        def progress(done, total):
            bar.total = total
            bar.update(done - bar.n)

        page = replay_html(trace, f"specviz replay: {settings.drafter}", progress)
    atomic_write(out, lambda tmp: Path(tmp).write_text(page, encoding="utf-8"))
    print(f"wrote {args.out} ({len(trace.rounds)} rounds, {len(page.encode()) / 1e6:.1f} MB): open it in a browser, "
          "no server or network needed")  # fmt: skip


def cmd_exactness(args) -> None:
    if not 1 <= args.samples <= MAX_SAMPLES:
        raise CLIError(f"--samples must be between 1 and {MAX_SAMPLES}, got {args.samples}")
    if args.min_mass is not None and not 0 <= args.min_mass < 1:
        raise CLIError(f"--min-mass must be at least 0 and below 1, got {args.min_mass}")
    k = AUTO_K_MAX if args.k == "auto" else args.k
    target, prompt, settings, draft_model = prepare(args, max(1, k + 1))  # runs of K + 1 tokens
    B, unit = target.config.block_size, "tokens" if target.bpe else "characters"
    if len(prompt) + settings.k > B:  # before any sampling
        raise CLIError(f"the prompt and the {settings.k + 1} generated tokens must fit in one window of {B}: "
                       f"use at most {B - settings.k} {unit} of prompt")  # fmt: skip
    with tqdm(total=args.samples, desc="sampling", unit="run", disable=None) as bar:
        res = checked(lambda: run_exactness(target, prompt, settings, args.samples, draft_model, n_tokens=args.first,
                                            progress=lambda n: bar.update(n - bar.n), min_mass=args.min_mass))  # fmt: skip
    kind, sentence = verdict(res, ALPHA)
    pieces = target.tokenizer.pieces
    e, o = res.expected.flatten(), res.observed.flatten()
    if res.cells is None:
        cells = lambda i: torch.unravel_index(torch.tensor(i), res.expected.shape)  # noqa: E731
    else:  # pruned: the last cell is the rest
        cells = lambda i: res.cells[i] if i < len(res.cells) else None  # noqa: E731
    rows = [{"tokens": "".join(pieces[t] for t in cells(i)) if cells(i) is not None else None,
             "expected": float(e[i]), "observed": int(o[i]) / res.samples}
            for i in e.argsort(descending=True)[:10].tolist()]  # fmt: skip
    test = lambda t: {"statistic": t.statistic, "dof": t.dof, "p_value": t.p_value}  # noqa: E731
    result = {"drafter": settings.drafter, "verification": settings.verification, "temperature": settings.temperature,
              "k": settings.k, "samples": res.samples, "new_tokens": res.new_tokens, "draft_positions": res.draft_depths,
              "verdict": kind, "sentence": sentence, "p_value": res.p_value, "impossible": res.impossible,
              "every_position": test(res.joint), "positions": [test(t) for t in res.positions],
              "first_tokens": res.new_tokens if res.cells is not None else res.expected.dim(),
              "pruned": res.cells is not None, "rest": float(res.expected[-1]) if res.cells is not None else None,
              "first": test(res.first), "tv_distance": res.tv_distance,
              "top": rows}  # fmt: skip
    if args.json:
        print(json.dumps(result))
        return
    print(f"{settings.drafter} ({settings.verification}), T={settings.temperature}, K={settings.k}, {res.samples} runs "
          f"of {res.new_tokens} tokens")  # fmt: skip
    print(f"{kind}: {sentence}")
    for j, t in enumerate(res.positions, 1):
        print(f"  position {j}: " + ("too few runs alone (pooled)" if t.p_value is None
                                     else f"chi-square {t.statistic:.1f} on {t.dof} dof, p {t.p_value:.3g}"))  # fmt: skip
    f = res.first
    print(f"{res.enumerated}: " + ("not enough samples" if f.p_value is None else
          f"chi-square {f.statistic:.1f} on {f.dof} dof, p {f.p_value:.3g}") + f", TV {res.tv_distance:.4f}")  # fmt: skip
    for r in rows:
        label = "(the rest)" if r["tokens"] is None else repr(r["tokens"])
        print(f"  {label:8} expected {r['expected']:.4f}  observed {r['observed']:.4f}")
