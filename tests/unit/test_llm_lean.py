"""The transformers model with its linear layers on our kernel (specviz/llm/lean.py), on the tiny random Llama
and GPT-2 (tests/llm_models.py): the same logits as the model's own layers, the model left as it was, one
copy per model, row-independent products, and the model itself where the kernel cannot run it."""

import pytest
import torch
from torch import nn
from transformers.pytorch_utils import Conv1D

from specviz.llm import lean as lean_module
from specviz.llm.lean import KernelLinear, lean
from specviz.llm.load import load_model
from tests.llm_models import checkpoint, folder

KINDS = ("llama", "gpt2")
PROMPT = "ROMEO:\nBut soft, what light through yonder window breaks?"


def linears(model: nn.Module) -> list[nn.Module]:
    return [m for m in model.modules() if isinstance(m, nn.Linear | Conv1D | KernelLinear)]


@pytest.mark.parametrize("kind", KINDS)
def test_every_linear_layer_runs_on_the_kernel_and_the_model_is_unchanged(kind):
    ck = checkpoint(kind)
    before = {name: p for name, p in ck.model.named_parameters()}
    kinds_before = [type(m) for m in linears(ck.model)]
    net = lean(ck.model)
    assert net is not ck.model and lean(ck.model) is net  # one copy per model, kept
    assert ck.target_model().net is net
    assert all(isinstance(m, KernelLinear) for m in linears(net)) and len(linears(net)) == len(kinds_before)
    assert [type(m) for m in linears(ck.model)] == kinds_before  # the model's own layers are still its own
    after = dict(ck.model.named_parameters())
    assert after.keys() == before.keys() and all(after[n] is before[n] for n in before)
    shared = {id(p) for p in ck.model.parameters()}
    assert all(id(m.weight) in shared for m in linears(net))  # the copy reads the model's own weights


@pytest.mark.parametrize("kind", KINDS)
def test_the_lean_copy_gives_the_models_logits_in_float64(kind):
    ck = checkpoint(kind)
    ids = torch.tensor([ck.tokenizer.encode(PROMPT)])
    with torch.no_grad():
        want = ck.model(input_ids=ids).logits
        got = lean(ck.model)(input_ids=ids).logits
    assert got.shape == want.shape
    assert torch.allclose(got, want, rtol=0, atol=1e-10), (got - want).abs().max()


@pytest.mark.parametrize("kind", KINDS)
def test_the_lean_copy_is_close_in_float32_and_its_rows_do_not_depend_on_each_other(kind):
    ck = checkpoint(kind, torch.float32)
    ids = ck.tokenizer.encode(PROMPT)
    with torch.no_grad():
        want = ck.model(input_ids=torch.tensor([ids])).logits[0]
        got = lean(ck.model)(input_ids=torch.tensor([ids])).logits[0]
        assert torch.allclose(got, want, rtol=0, atol=1e-4), (got - want).abs().max()
        layer = linears(lean(ck.model))[0]
        x = torch.randn(7, layer.rows.n_in)
        together = layer(x)
        alone = torch.cat([layer(x[i : i + 1]) for i in range(7)])
    assert torch.equal(together, alone)  # bit for bit: a verify pass's products round as one-row passes do


def test_without_the_kernel_the_model_itself_runs(monkeypatch):
    ck = checkpoint("llama", seed=1)
    monkeypatch.setattr(lean_module, "kernel", lambda: None)
    assert lean(ck.model) is ck.model
    assert ck.target_model().net is ck.model


def test_a_dtype_the_kernel_lacks_runs_on_torchs_layers():
    model = load_model(str(folder("llama")), torch.bfloat16).model
    assert lean(model) is model


def test_the_copy_goes_with_its_model():
    """The app's cache may drop a model: its kernel copy (a second copy of its weights) must go with it."""
    import gc

    model = load_model(str(folder("gpt2")), torch.float32).model
    assert lean(model) is not model and model in lean_module._LEAN
    count = len(lean_module._LEAN)
    del model
    gc.collect()
    assert len(lean_module._LEAN) == count - 1


def test_the_copy_holds_the_panels_alone_and_the_fallback_rebuilds_the_weight():
    """One extra copy of the weights, not two: the (in, out) copy the panels are made from goes. A call the
    kernel cannot take (another dtype) still computes x W^T + b, from the panels."""
    ck = checkpoint("llama", torch.float32)
    layer = linears(lean(ck.model))[0]
    assert layer.rows.weight_t.numel() == 0 and layer.rows.panels is not None
    x = torch.randn(3, layer.rows.n_in, dtype=torch.float64)
    want = x @ layer.weight.double().t()
    with pytest.raises(RuntimeError):  # addmm's own message: float32 weights, float64 rows
        layer(x)
    assert torch.allclose(layer(x.float()).double(), want, atol=1e-5)
    assert torch.allclose(layer.rows._dense(), layer.weight.t())
