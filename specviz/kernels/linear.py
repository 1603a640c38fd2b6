"""A linear layer for the few rows of a decoding pass: y = x W^T + b, with each weight read from
memory once for all the rows (specviz/kernels/linear.cpp), not once per row or two.

Why our own kernel? Speculative decoding pays off only if a pass over N tokens costs little more than a
pass over one. torch.addmm (MKL's gemm) reads each weight again for every row or two, and the target's
12.6 MB of weights do not stay in a small VM's cache. This kernel reads each weight panel once and
multiplies every row by it while it is in the cache: tiles of up to 6 rows (14 with AVX-512's 32
registers) hold each weight vector in a register for all of a tile's rows, and a tile of 4 rows or more
prefetches its weights, which in rounds come from DRAM. With AVX-512 the vectors are 64 bytes and a panel
is 32 floats wide. A column's sum is the same FMAs in the same order at either width: the width changes
the speed, never the numbers. Measurements and what was tried: docs/notes/kernels.md.

What it does not change: the numbers, within float rounding (each row's sums run in order over the
input; MKL's run in blocks), checked against torch.addmm in tests/unit/test_linear.py and, through the whole
pass, against the reference GPT (tests/unit/test_cached_model.py: 1e-10 in float64, 1e-5 in float32). And a
row's output does not depend on the rows beside it, bit for bit (tests/unit/test_linear.py): a verify pass
rounds exactly as the one-token passes of plain decoding do.

How it is built: specviz/kernels/native.py compiles it at first use, with attention.cpp; without a
compiler, or with SPECVIZ_KERNEL=0, every product goes to torch.addmm: slower on such CPUs, the same
numbers within rounding.

It runs prefills too (the prompt's, and the 128 tokens re-read at each window jump), where it measured
faster than MKL's blocked gemm at every row count. So a prefill's rows round exactly as one-token passes
would (no second rounding rule for the long passes), and the re-prefills every engine pays, a fixed cost
that caps every speedup, are cheaper.
"""

import torch
from torch.nn import functional as F

from specviz.kernels.native import kernel

_SYMBOLS = {torch.float32: "linear_rows_f32", torch.float64: "linear_rows_f64"}


class Linear:
    """An nn.Linear's weight and bias, copied, for the lean pass. Called on x (N, in): the kernel for
    any N where it is built (a width short of whole panels padded with zero columns, never
    returned), else torch.addmm. No autograd: the lean pass runs under no_grad.

    The kernel is looked up at the first call (or the first read of ``fn``, ``width``, ``panels``), not
    when the layer is made: on a machine's first start the kernels are still being built then
    (native.prepare_in_background), and a page that makes a run draws it without waiting for them."""

    __slots__ = ("bias", "weight_t", "_panels", "_padded_bias", "_fn", "n_in", "n_out", "_width", "_resolved")

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor):
        self.bias = bias.detach().clone().contiguous()  # (out,)
        self.weight_t = weight.detach().t().contiguous()  # (in, out), as addmm wants it
        self.n_in, self.n_out = self.weight_t.shape
        self._resolved = False

    def _resolve(self) -> None:
        """Find the kernel (waiting for its build, if one runs) and lay the weight out in its panels, once."""
        if self._resolved:
            return
        lib, dtype = kernel(), self.weight_t.dtype
        # a panel's columns: 2 vectors (linear.cpp), 16 floats with AVX2, 32 with AVX-512
        panel = lib.linear_panel_bytes() // self.weight_t.element_size() if lib is not None else 1
        fn = getattr(lib, _SYMBOLS[dtype]) if lib is not None and dtype in _SYMBOLS else None
        self._panels = self._padded_bias = None  # (width / panel, in, panel): each panel's rows contiguous
        self._width = -(-self.n_out // panel) * panel  # whole panels: lm_head's 65 columns take 80 (96), zeros past 65
        if fn is not None and self.weight_t.device.type == "cpu":
            pad = self._width - self.n_out
            self._panels = F.pad(self.weight_t, (0, pad)).view(self.n_in, -1, panel).transpose(0, 1).contiguous()
            self._padded_bias = F.pad(self.bias, (0, pad))  # (width,)
        else:
            fn = None
        self._fn = fn
        self._resolved = True  # last: another thread reading the fields meanwhile resolves them itself

    def lay_out(self, keep_weight: bool = True) -> None:
        """Find the kernel and lay the weight out in its panels now, not at the first call. ``keep_weight=False``:
        where the kernel runs, the panels alone then hold the weight (the (in, out) copy they were made from
        goes: half the memory), and the rare torch.addmm fallback rebuilds it from them."""
        self._resolve()
        if not keep_weight and self._fn is not None:
            self.weight_t = self.weight_t.new_empty(0)  # its dtype still says what x must be

    def _dense(self) -> torch.Tensor:
        """(in, out): the weight as torch.addmm takes it."""
        if self.weight_t.dim() == 2:
            return self.weight_t
        return self._panels.transpose(0, 1).reshape(self.n_in, self._width)[:, : self.n_out]

    @property
    def fn(self):
        """The kernel's entry point for this dtype, or None (torch.addmm)."""
        self._resolve()
        return self._fn

    @property
    def width(self) -> int:
        """Output columns as computed: n_out rounded up to whole panels."""
        self._resolve()
        return self._width

    @property
    def panels(self) -> torch.Tensor | None:
        self._resolve()
        return self._panels

    @property
    def padded_bias(self) -> torch.Tensor | None:
        self._resolve()
        return self._padded_bias

    @classmethod
    def of(cls, lin: torch.nn.Linear) -> "Linear":
        return cls(lin.weight, lin.bias)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """(N, in) -> (N, out)"""
        N = x.size(0)
        self._resolve()
        if self._fn is None or x.shape != (N, self.n_in) or x.dtype != self.weight_t.dtype or not x.is_cpu:
            return torch.addmm(self.bias, x, self._dense())  # which also says what is wrong with x, if anything
        x = x.contiguous()
        y = torch.empty(N, self._width, dtype=x.dtype)
        self._fn(
            x.data_ptr(), N, x.size(1), self._panels.data_ptr(), self._width, self._padded_bias.data_ptr(), y.data_ptr()
        )
        return y if self._width == self.n_out else y[:, : self.n_out]  # (N, out), a view past whole panels
