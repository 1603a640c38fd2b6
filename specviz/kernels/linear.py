"""A linear layer for the few rows of a decoding pass: y = x W^T + b, with each weight read from
memory once for all the rows (specviz/kernels/linear.cpp), not once per row or two.

Why our own kernel? Speculative decoding pays off only if a pass over N tokens costs little more than a
pass over one. On a 2-core AMD EPYC (Zen 3, AVX2; 1 thread, 2026-11-24) torch.addmm, MKL's gemm, did not
manage that: the 16 products of the target's 4 layers took 0.79 ms at 1 row, 1.34 ms at 2 and 1.93 ms at
3 (each weight read again for every row or two: the 12.6 MB of weights do not stay in this VM's cache),
and the whole pass cost v(2) = 1.26-1.32, v(5) = 1.54-1.65 one-token passes. This kernel reads each
weight panel once and multiplies every row by it while it is in the cache; the same products took 0.69,
0.84 and 0.87 ms, and the pass 1.04 at N = 2, 1.34 at 5, 1.53 at 8, in units of a one-token pass that
itself got 13-18% faster (``python -m specviz bench`` measures the cost curve each run).

The second version (panels of 16 columns, tiles of up to 6 rows, each weight vector held in a register
for all of a tile's rows) made the products faster again at every N > 1; in the whole pass, old kernel
against new in one process (1 thread, 60 interleaved repeats, 2026-11-24): 0.93x the time at 2-4 rows,
0.95x at 9, 0.91x at 17, the same at 1. Since 2026-11-25 a tile of 4 rows or more also prefetches its
weights: in rounds they come from DRAM, and one panel streamed by a 4-6 row tile is a stream the hardware
prefetcher does not run far enough ahead of, so the arithmetic waited on memory instead of overlapping it
(linear.cpp has the figures: 9 rows 1123 -> 949 us, caches evicted; 1 row unchanged).

On a CPU with AVX-512 (Zen 5 here since 2026-11-26) the vectors are 64 bytes and a tile may hold 14 rows
(32 registers), so a panel is 32 floats wide. Whole pass, 1 thread, 200 repeats after 128 cache entries,
AVX2 build against AVX-512 build of the same source on the same Zen 5: 1 row 289-308 -> 284-293 us, 5 rows
450-462 -> 342-361, 9 rows 731-747 -> 445-465, 17 rows 1165-1203 -> 761-767, a 128-token prefill 7.3 ->
4.2 ms. So v(5) fell from ~1.55 to ~1.21 there. A column's sum is the same FMAs in the same order at
either width: the width changes the speed, never the numbers.

What it does not change: the numbers, within float rounding (each row's sums run in order over the
input; MKL's run in blocks), checked against torch.addmm in tests/test_linear.py and, through the whole
pass, against the reference GPT (tests/test_cached_model.py: 1e-10 in float64, 1e-5 in float32). And a
row's output does not depend on the rows beside it, bit for bit (tests/test_linear.py): a verify pass
rounds exactly as the one-token passes of plain decoding do.

How it is built: specviz/kernels/native.py compiles it at first use, with attention.cpp; without a
compiler, or with SPECVIZ_KERNEL=0, every product goes to torch.addmm: slower on such CPUs, the same
numbers within rounding.

It runs prefills too (the prompt's, and the 128 tokens re-read at each window jump): since the tiles
above, it beat MKL's blocked gemm at every row count, the 16 products of a pass taking 3.88 / 5.08 / 9.91 /
20.2 ms at 48 / 64 / 128 / 256 rows against addmm's 4.97 / 6.13 / 11.94 / 20.94 (1 thread, weights in
the L3 cache, 15 interleaved repeats, 2026-11-25); with attention's kernel likewise, a 128-row prefill
took 13.4 ms against 15.7. So a prefill's rows round exactly as one-token passes would (no second
rounding rule for the long passes), and the re-prefills every engine pays, a fixed cost that caps every
speedup, are cheaper.
"""

import torch
from torch.nn import functional as F

from specviz.kernels.native import kernel

_SYMBOLS = {torch.float32: "linear_rows_f32", torch.float64: "linear_rows_f64"}


class Linear:
    """An nn.Linear's weight and bias, copied, for the lean pass. Called on x (N, in): the kernel for
    any N where it is built (a width short of whole panels padded with zero columns, never
    returned), else torch.addmm. No autograd: the lean pass runs under no_grad."""

    __slots__ = ("bias", "weight_t", "panels", "padded_bias", "fn", "n_in", "n_out", "width")

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor):
        self.bias = bias.detach().clone().contiguous()  # (out,)
        self.weight_t = weight.detach().t().contiguous()  # (in, out), as addmm wants it
        self.n_in, self.n_out = self.weight_t.shape
        lib, dtype = kernel(), self.weight_t.dtype
        # a panel's columns: 2 vectors (linear.cpp), 16 floats with AVX2, 32 with AVX-512
        panel = lib.linear_panel_bytes() // self.weight_t.element_size() if lib is not None else 1
        self.fn = getattr(lib, _SYMBOLS[dtype]) if lib is not None and dtype in _SYMBOLS else None
        self.panels = self.padded_bias = None  # (width / panel, in, panel): each panel's rows contiguous
        self.width = -(-self.n_out // panel) * panel  # whole panels: lm_head's 65 columns take 80 (96), zeros past 65
        if self.fn is not None and self.weight_t.device.type == "cpu":
            pad = self.width - self.n_out
            self.panels = F.pad(self.weight_t, (0, pad)).view(self.n_in, -1, panel).transpose(0, 1).contiguous()
            self.padded_bias = F.pad(self.bias, (0, pad))  # (width,)
        else:
            self.fn = None

    @classmethod
    def of(cls, lin: torch.nn.Linear) -> "Linear":
        return cls(lin.weight, lin.bias)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """(N, in) -> (N, out)"""
        N = x.size(0)
        if self.fn is None or x.shape != (N, self.n_in) or x.dtype != self.weight_t.dtype or not x.is_cpu:
            return torch.addmm(self.bias, x, self.weight_t)  # which also says what is wrong with x, if anything
        x = x.contiguous()
        y = torch.empty(N, self.width, dtype=x.dtype)
        self.fn(
            x.data_ptr(), N, x.size(1), self.panels.data_ptr(), self.width, self.padded_bias.data_ptr(), y.data_ptr()
        )
        return y if self.width == self.n_out else y[:, : self.n_out]  # (N, out), a view past whole panels
