"""The roofline beside the batch bench (specviz/bench/batch.py): this CPU's own figures, measured here, and
what they predict for a target pass and for the crossover.

    peak       the products' kernel (specviz/kernels/linear.py) on many rows with its weights in the cache:
               the multiply-add rate the pass's arithmetic can reach on one thread (flop/s, 2 per FMA)
    bandwidth  one thread reading a buffer far larger than the caches (bytes/s)
    a pass     over R rows of S sequences, each with ``context`` cache entries: it reads the weights once
               (every row shares them) and each sequence's keys and values once; it computes 2 flops per
               weight per row, and attention's 4 C flops per cache entry per row and layer. Its time on
               the roofline is max(bytes / bandwidth, flops / peak); its arithmetic intensity flops / bytes

At one sequence the weights dominate the bytes, and a few more rows cost almost nothing: the pass is
memory-bound until R reaches peak / bandwidth times the bytes per row's flops (the ridge). Speculation sends
r rows a sequence where plain decoding sends 1, and is paid back by tau tokens a round: on the roofline its
speedup at batch B is tau * t(B rows) / t(B r rows), plus what each sequence costs the CPU beside the pass
(drafting, accepting), which the model takes from the batch bench's B = 1 rows. ``predicted_speedup``.
"""

import math
import time
from dataclasses import dataclass

import torch

from specviz.kernels.cached_model import lean_weights


@dataclass
class Roofline:
    peak_flops: float  # the products' kernel, weights in the cache, many rows: flop/s on one thread
    bandwidth: float  # bytes/s, one thread reading a buffer far beyond the caches
    weight_bytes: int  # the target's weights a pass reads: its products', embedding rows aside
    weight_params: int  # multiply-adds per row in the products (the weights the rows multiply)
    kv_bytes_per_entry: int  # one cache entry's keys and values, every layer
    attn_flops_per_entry: int  # attention's flops per row per cache entry it sees, every layer

    @property
    def ridge(self) -> float:
        """Arithmetic intensity (flop/byte) where the pass turns from memory- to compute-bound."""
        return self.peak_flops / self.bandwidth

    def flops(self, rows: int, seqs: int, context: int) -> float:
        return rows * (2 * self.weight_params + self.attn_flops_per_entry * context)

    def bytes(self, rows: int, seqs: int, context: int) -> float:
        return self.weight_bytes + seqs * context * self.kv_bytes_per_entry

    def intensity(self, rows: int, seqs: int, context: int) -> float:
        """Flops per byte of a pass over ``rows`` rows of ``seqs`` sequences."""
        return self.flops(rows, seqs, context) / self.bytes(rows, seqs, context)

    def seconds(self, rows: int, seqs: int, context: int) -> float:
        """The pass's time on the roofline: whichever of memory and arithmetic takes longer."""
        return max(self.bytes(rows, seqs, context) / self.bandwidth, self.flops(rows, seqs, context) / self.peak_flops)


def _best(fn, repeats: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def measure_peak(model, rows: int = 64, repeats: int = 30) -> float:
    """The products' kernel over ``rows`` rows of the target's widest layer (its MLP's first), the weights hot
    in the cache (the same layer again and again): flop/s."""
    lin = lean_weights(model).layers[0][6]  # c_fc: (C, 4C)
    x = torch.randn(rows, lin.n_in, dtype=lin.weight_t.dtype)
    t = _best(lambda: lin(x), repeats)
    return 2 * rows * lin.n_in * lin.n_out / t


def measure_bandwidth(megabytes: int = 256, repeats: int = 5) -> float:
    """One thread summing a float32 buffer of ``megabytes``, far beyond the caches: bytes/s."""
    buf = torch.ones(megabytes * (1 << 20) // 4, dtype=torch.float32)
    t = _best(lambda: buf.sum(), repeats)
    return buf.numel() * 4 / t


def roofline(model, peak: float | None = None, bandwidth: float | None = None) -> Roofline:
    """This CPU's roofline for ``model`` (a GPT): its figures measured now, unless given."""
    cfg, w = model.config, lean_weights(model)
    lins = [lin for layer in w.layers for lin in layer if hasattr(lin, "n_in")] + [w.lm_head]
    params = sum(lin.n_in * lin.n_out for lin in lins)
    size = w.wte.element_size()
    return Roofline(
        peak_flops=peak if peak is not None else measure_peak(model),
        bandwidth=bandwidth if bandwidth is not None else measure_bandwidth(),
        weight_bytes=params * size,
        weight_params=params,
        kv_bytes_per_entry=2 * cfg.n_layer * cfg.n_embd * size,
        attn_flops_per_entry=4 * cfg.n_layer * cfg.n_embd,
    )


def predicted_speedup(roof: Roofline, B: int, rows_per_seq: float, tau: float, context: int, seq_cost: float,
                      base_seq_cost: float) -> float:  # fmt: skip
    """A drafter's speedup over plain decoding at batch ``B`` on the roofline: tau tokens a round for a pass
    over B * rows_per_seq rows, against one token a round for a pass over B rows, each round also paying
    ``seq_cost`` (``base_seq_cost`` for plain decoding) seconds of CPU per sequence (drafting, accepting)."""
    spec = roof.seconds(round(B * rows_per_seq), B, context) + B * seq_cost
    plain = roof.seconds(B, B, context) + B * base_seq_cost
    return tau * plain / spec


NEVER_PAID = -1.0  # predicted_crossover's answer when the speedup is below 1 already at B = 1


def predicted_crossover(roof: Roofline, rows_per_seq: float, tau: float, context: float, seq_cost: float,
                        base_seq_cost: float, largest: int = 4096) -> float | None:  # fmt: skip
    """The batch size where ``predicted_speedup`` falls through 1 (log-interpolated between whole batch
    sizes); NEVER_PAID if it is below 1 at B = 1, None if it stays above 1 up to ``largest``."""
    prev = None
    for B in range(1, largest + 1):
        s = predicted_speedup(roof, B, rows_per_seq, tau, round(context), seq_cost, base_seq_cost)
        if s < 1:
            if prev is None:
                return NEVER_PAID
            f = (prev - 1) / (prev - s)
            return 2 ** (math.log2(B - 1) + f * (math.log2(B) - math.log2(B - 1)))
        prev = s
    return None


def _say(b: float | None, largest: str) -> str:
    if b is None:
        return f"none up to B = {largest}"
    return "below 1 from B = 1" if b == NEVER_PAID else f"B = {b:.1f}"


def roofline_lines(roof: Roofline, rows: list[dict], context: float) -> list[str]:
    """The roofline beside the batch bench's rows: this CPU's figures, each batch size's arithmetic intensity,
    each drafter's speedup predicted and measured, and its crossover. Two predictions: the passes alone on the
    roofline (what the hardware allows), and the passes plus the CPU each sequence's round costs beside the
    pass (drafting, accepting: from the B = 1 rows, per round), which batching does not share."""
    from specviz.bench.batch import crossover, per_round_cpu
    from specviz.drafters import BASELINE

    out = [f"roofline: peak {roof.peak_flops / 1e9:.1f} Gflop/s (the products' kernel, weights in the cache), "
           f"bandwidth {roof.bandwidth / 1e9:.1f} GB/s, ridge {roof.ridge:.1f} flop/byte; weights "
           f"{roof.weight_bytes / 1e6:.1f} MB, {roof.kv_bytes_per_entry * context / 1e6:.2f} MB of keys and values "
           f"per sequence ({context:.0f} entries)"]  # fmt: skip
    rows = [r for r in rows if not r.get("k_auto", False)]  # the fixed-K rows: adaptive K's are its own story
    sizes = sorted({r["batch"] for r in rows})
    for B in sizes:
        at = {r["drafter"]: r for r in rows if r["batch"] == B}
        parts = [f"{d} {roof.intensity(round(r['rows_per_pass']), B, round(context)):.1f}" for d, r in at.items()]
        out.append(f"  B = {B}: flop/byte of a pass: " + ", ".join(parts))
    ones = {r["drafter"]: r for r in rows if r["batch"] == 1}
    base = ones.get(BASELINE)
    if base is None:
        return out
    # The run's clock against the roofline's: its one-row passes took this many times their roofline time (a
    # busy machine's share of the CPU, what the roofline leaves out); the CPU costs are put on the roofline's clock.
    slow = base["verify_s"] / base["target_forwards"] / roof.seconds(1, 1, round(context))
    out.append(
        f"  the run's one-row passes took {slow:.2f}x their roofline time: the CPU costs below are divided by it"
    )
    for d, one in ones.items():
        if d == BASELINE:
            continue
        r, tau = one["rows_per_pass"], one["tokens_per_forward"]
        c, c0 = per_round_cpu(one) / slow, per_round_cpu(base) / slow
        at = {x["batch"]: x for x in rows if x["drafter"] == d}

        def cells(B, x, c=c, c0=c0):  # each batch size's own tau and rows a sequence
            rb, tb = x["rows_per_pass"] / B, x["tokens_per_forward"]
            return (f"B={B} {predicted_speedup(roof, B, rb, tb, round(context), 0, 0):.2f}/"
                    f"{predicted_speedup(roof, B, rb, tb, round(context), c, c0):.2f}/{x['speedup']:.2f}")  # fmt: skip

        out.append(f"  {d} (at B = 1: tau {tau:.2f}, {r:.1f} rows a sequence, CPU beside the pass {c * 1e3:.2f} ms a "
                   f"round against plain decoding's {c0 * 1e3:.2f}): speedup predicted passes only / with CPU / "
                   "measured: " + ", ".join(cells(B, at[B]) for B in sizes))  # fmt: skip
        at = {B: x["speedup"] for B, x in at.items()}
        top = str(max(sizes))
        out.append(f"    crossover predicted {_say(predicted_crossover(roof, r, tau, context, 0, 0), '4096')} (passes "
                   f"only), {_say(predicted_crossover(roof, r, tau, context, c, c0), '4096')} (with CPU); measured "
                   f"{_say(crossover(rows, d), top) if at[1] >= 1 else _say(NEVER_PAID, top)}")  # fmt: skip
    return out
