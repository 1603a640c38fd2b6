"""A transformers model whose linear layers run on our few-rows kernel (specviz/kernels/linear.py).

Why: torch's products read each weight again for every row or two, so on SmolLM2 a pass over 2 to 5 rows
cost ~1.7 one-row passes, and a verify pass paid back little of what a draft saved. The kernel reads each
weight once for all the rows of a pass: on SmolLM2 its 5-row products cost ~1.3 of its 1-row ones, and its
1-row ones take about half torch's time. Figures: docs/notes/llm.md.

``lean(model)`` is a shallow copy of the model's module tree, made once per model and kept while the model
lives: every ``nn.Linear`` (and GPT-2's ``Conv1D``) becomes a ``KernelLinear`` holding a copy of its weight
in the kernel's panels; every other module, parameter and buffer is the model's own, shared. The model
itself is never changed (it is cached once per server and read by every session, and by transformers'
own ``generate`` in the bench). The panels cost a second copy of the linear weights in memory.

What it changes in the numbers: a product's sums run in order over the input (MKL's run in blocks), so the
logits round apart from the plain model's in float32 (~1e-6) and agree to ~1e-12 in float64
(tests/unit/test_llm_lean.py). And a row's products no longer depend on the rows beside it: a verify pass's
linear layers round exactly as plain decoding's one-row passes do.

Where the kernel is not built (no compiler, SPECVIZ_KERNEL=0), or the model is not on the CPU or not in
float32/float64, ``lean`` returns the model itself.
"""

import copy
import threading
import weakref

import torch
from torch import nn
from transformers.pytorch_utils import Conv1D

from specviz.kernels.linear import Linear
from specviz.kernels.native import kernel

_LEAN: "weakref.WeakKeyDictionary[nn.Module, nn.Module]" = weakref.WeakKeyDictionary()  # model -> its lean copy
_LOCK = threading.Lock()  # one copy per model, whichever session asks first


class KernelLinear(nn.Module):
    """y = x W^T + b over the last dimension, on the kernel. Keeps the layer's own weight (shared, for
    whoever reads ``weight``) beside the kernel's panels. (..., in) -> (..., out)"""

    def __init__(self, layer: nn.Module):
        super().__init__()
        weight = layer.weight.t() if isinstance(layer, Conv1D) else layer.weight  # (out, in): Conv1D keeps (in, out)
        bias = layer.bias if layer.bias is not None else torch.zeros(weight.shape[0], dtype=weight.dtype)
        self.weight = layer.weight  # the model's parameter, shared
        self.rows = Linear(weight, bias)
        self.rows.lay_out(keep_weight=False)  # now, one layer at a time: the panels alone stay

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.rows(x.reshape(-1, x.shape[-1]))  # (N, out), a view past whole panels
        return y.reshape(*x.shape[:-1], y.shape[-1])  # a copy only where the view is not contiguous


def _copy(module: nn.Module) -> nn.Module:
    """The module tree with every linear layer a KernelLinear: new module objects, the same weights."""
    if isinstance(module, nn.Linear | Conv1D):
        return KernelLinear(module)
    twin = copy.copy(module)  # shares _parameters, _buffers and hooks; the children dict is its own
    twin._modules = {name: None if m is None else _copy(m) for name, m in module._modules.items()}
    return twin


def usable(model: nn.Module) -> bool:
    """Whether the kernel can run this model's products: built here, a CPU model in float32 or float64."""
    weight = model.get_output_embeddings().weight
    return weight.device.type == "cpu" and weight.dtype in (torch.float32, torch.float64) and kernel() is not None


def lean(model: nn.Module) -> nn.Module:
    """The model with its linear layers on the kernel (made at the first call, then kept), or the model itself
    where the kernel cannot run it."""
    if not usable(model):
        return model
    with _LOCK:
        twin = _LEAN.get(model)
        if twin is None:
            twin = _LEAN[model] = _copy(model)
        return twin
