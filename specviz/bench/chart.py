"""A static PNG of benchmark rows, for the README: per drafter, the measured speedup over the
baseline next to its tokens per target forward pass (the speedup it would have if drafting and
verifying were free), at each temperature, a bar per drafter and verification rule; and, when the rows have them, tokens per second
against transformers on the same weights. Needs matplotlib (a development dependency)."""

from pathlib import Path

from models.checkpoint import atomic_write
from specviz.drafters import BASELINE
from specviz.verifiers import LOSSLESS


def plain(text) -> str:
    """Text matplotlib draws as it is: a '$' would start mathtext (rows and titles are user text)."""
    return str(text).replace("$", r"\$")


def name(row: dict) -> str:
    """A row's bar label: the drafter, and the verification rule when it is not the lossless one."""
    rule = row.get("verification", LOSSLESS)
    return row["drafter"] if rule == LOSSLESS else f"{row['drafter']}\n({rule})"


def bench_chart(rows: list[dict], path, title: str = "") -> Path:
    import matplotlib

    matplotlib.use("Agg")  # no display: write the file only
    import matplotlib.pyplot as plt

    # The fixed-K rows (lossless and block): one bar per drafter and rule; the adaptive-K rows are in the table.
    main = [r for r in rows if r["suite"] == "main" and not r.get("k_auto", False)]
    versus = [r for r in rows if r["suite"] == "vs-transformers"]
    if not main:
        raise ValueError("no rows of the main suite to chart")
    drafters = list(dict.fromkeys(name(r) for r in main))
    temps = sorted({r["temperature"] for r in main})
    wide = max(8.0, 0.5 * len(drafters) + 2)  # room for every bar and its label
    fig, axes = plt.subplots(1, 2 if versus else 1, figsize=(wide + (5 if versus else 0), 5.2), squeeze=False,
                             gridspec_kw={"width_ratios": [wide, 5]} if versus else None)  # fmt: skip
    ax = axes[0][0]
    width = 0.8 / len(temps)
    colors = ("tab:blue", "tab:orange", "tab:green", "tab:red")
    for j, T in enumerate(temps):
        by = {name(r): r for r in main if r["temperature"] == T}
        have = [i for i, d in enumerate(drafters) if d in by]  # a rule may run at one temperature only
        xs = [i - 0.4 + width * (j + 0.5) for i in have]
        ideal = [by[drafters[i]]["tokens_per_forward"] for i in have]
        speed = [by[drafters[i]]["speedup"] for i in have]
        ax.bar(xs, ideal, width * 0.9, fill=False, edgecolor=colors[j % 4], linestyle="--",
               label=f"T={T:g}: tokens per forward (ideal)")  # fmt: skip
        bars = ax.bar(xs, speed, width * 0.9, color=colors[j % 4], alpha=0.85, label=f"T={T:g}: measured speedup")
        ax.bar_label(bars, labels=[f"{s:.2f}" for s in speed], fontsize=7, padding=2)
    ax.axhline(1.0, color="gray", linewidth=0.8)
    ax.set_xticks(range(len(drafters)), [plain(d) for d in drafters], rotation=40, ha="right", fontsize=8)
    ax.set_ylabel("× the KV-cached baseline")
    r0 = main[0]
    ax.set_title(
        f"Speedup and tokens per forward pass, K={r0['k']}, {r0['prompts']} prompts × {r0['new_tokens']} tokens"
    )
    ax.legend(fontsize=7, loc="upper left")
    if versus:
        ax = axes[0][1]
        labels = [plain(f"{r['impl']}\n{r['drafter'] if r['drafter'] != BASELINE else 'greedy'}") for r in versus]
        bars = ax.bar(range(len(versus)), [r["tokens_per_s"] for r in versus],
                      color=["tab:blue" if r["impl"] == "specviz" else "tab:gray" for r in versus])  # fmt: skip
        ax.bar_label(bars, fmt="%.0f", fontsize=8, padding=2)
        ax.set_xticks(range(len(versus)), labels, fontsize=8)
        ax.set_ylabel("tokens per second")
        ax.set_title(f"Same weights, T=0, {versus[0]['new_tokens']} tokens in one window")
    if title:
        fig.suptitle(plain(title), fontsize=9)
    fig.tight_layout()
    path = Path(path)
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=110))
    plt.close(fig)
    return path
