"""The seam for the target model (specviz/core/target.py): CachedModel has every member of TargetModel
with a compatible signature."""

import inspect

import torch

from models.gpt import GPT, GPTConfig
from specviz.core.target import TargetModel
from specviz.kernels.cached_model import CachedModel


def _members(protocol) -> tuple[dict, dict]:
    """(data members with their annotations, methods and properties by name) that ``protocol`` declares."""
    fields = dict(protocol.__annotations__)
    return fields, {n: v for n, v in vars(protocol).items() if not n.startswith("_") and n not in fields}


def _small_model() -> CachedModel:
    torch.manual_seed(0)
    return CachedModel(GPT(GPTConfig(block_size=16, vocab_size=11, n_layer=2, n_head=2, n_embd=8)).eval())


def test_cached_model_has_every_member_of_the_interface():
    fields, methods = _members(TargetModel)
    assert sorted(fields) == ["block_size", "dtype", "n_embd", "n_layer", "start", "vocab_size"]
    assert sorted(methods) == ["capture", "copy_from", "features", "first_layers", "forward", "head", "held", "keep",
                               "length", "sync", "trim_missing"]  # fmt: skip
    lm = _small_model()
    kinds = {int: int, torch.dtype: torch.dtype}
    for name, kind in fields.items():
        assert isinstance(getattr(lm, name), kinds[kind]), name
    assert (lm.vocab_size, lm.n_layer, lm.n_embd, lm.block_size, lm.dtype) == (11, 2, 8, 16, torch.float32)
    for name, member in methods.items():
        impl = inspect.getattr_static(CachedModel, name)
        if isinstance(member, property):
            assert isinstance(impl, property), f"{name}: a property in the interface"
            continue
        want, got = inspect.signature(member).parameters, inspect.signature(impl).parameters
        for p in want.values():  # every parameter the interface names, by the same name, kind and default
            assert p.name in got, f"{name}: no parameter {p.name}"
            q = got[p.name]
            assert (q.kind, q.default) == (p.kind, p.default), f"{name}({p.name})"
        extra = [q for n, q in got.items() if n not in want]
        assert all(q.default is not inspect.Parameter.empty for q in extra), f"{name}: extra parameters need defaults"
        assert list(got)[: len(want)] == list(want), f"{name}: parameters in the interface's order"


def test_first_layers_and_head_are_the_forward_pass_when_every_layer_runs():
    """Layer-skip's draft pass through all the layers is the verify pass, bit for bit."""
    lm = _small_model()
    context = [1, 2, 3, 4, 5]
    lm.sync(context)
    P = lm.length
    want = lm.forward([5, 6, 7], [P, P + 1, P + 2])  # (3, V)
    got = lm.head(lm.first_layers([5, 6, 7], [P, P + 1, P + 2], P, lm.n_layer))  # (3, V)
    assert torch.equal(got, want)
    assert lm.model in lm.held() and any(t.data_ptr() == lm.kv_buf.data_ptr() for t in lm.held()[2:4])
