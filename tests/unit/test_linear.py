"""The few-rows kernel (specviz/kernels/linear.py, built by specviz/kernels/native.py) computes what torch.addmm computes, within rounding, at every
row count a pass sends it and past it; without it, everything goes to addmm, and a failed build says
why in one line."""

import pytest
import torch

from specviz.kernels import native
from specviz.kernels.linear import Linear

TOL = {torch.float32: 1e-5, torch.float64: 1e-12}  # outputs are O(1): weights scaled by 1/sqrt(in)
ROWS = [*range(1, 34), 64, 133]  # every tiling of a verify pass's rows, and a prefill's (linear.cpp)


def layer(n_in: int, n_out: int, dtype: torch.dtype, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    weight = torch.randn(n_out, n_in, generator=g, dtype=dtype) / n_in**0.5  # (out, in), as nn.Linear
    return weight, torch.randn(n_out, generator=g, dtype=dtype)


def addmm(weight, bias, x):
    return torch.addmm(bias, x, weight.t())


@pytest.fixture
def rebuild(monkeypatch, tmp_path):
    """Build the kernel again under this test's environment (into a cache folder of its own), and again
    after it."""
    monkeypatch.setattr(native, "CACHE", tmp_path / "kernel-cache")
    native._build.cache_clear()
    yield monkeypatch
    monkeypatch.undo()
    native._build.cache_clear()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("shape", [(256, 768), (1024, 256), (37, 80)], ids=["qkv", "mlp_proj", "odd_shape"])
def test_kernel_matches_addmm(dtype, shape):
    if native.kernel() is None:
        pytest.skip(native.backend())
    weight, bias = layer(*shape, dtype)
    lin = Linear(weight, bias)
    assert lin.fn is not None, "a width of whole panels runs on the kernel"
    g = torch.Generator().manual_seed(1)
    for N in ROWS:  # every tiling of the rows (linear.cpp)
        x = torch.randn(N, shape[0], generator=g, dtype=dtype)
        got, want = lin(x), addmm(weight, bias, x)
        assert got.shape == want.shape == (N, shape[1])
        assert float((got - want).abs().max()) < TOL[dtype], N


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_a_row_does_not_depend_on_the_rows_beside_it(dtype):
    """Bit for bit: a row gives the same output alone (a one-token pass) as in any tile of a verify pass,
    so the kernel cannot make a verify pass disagree with the baseline's passes by rounding."""
    if native.kernel() is None:
        pytest.skip(native.backend())
    weight, bias = layer(256, 160, dtype)  # float32: 10 AVX2 panels or 5 AVX-512 ones, whole groups and the rest
    lin = Linear(weight, bias)
    x = torch.randn(ROWS[-1], 256, generator=torch.Generator().manual_seed(2), dtype=dtype)
    alone = torch.cat([lin(x[i : i + 1]) for i in range(ROWS[-1])])
    for N in ROWS[1:]:
        assert torch.equal(lin(x[:N]), alone[:N]), N


def test_a_width_short_of_whole_panels_is_padded_and_never_returned():
    """lm_head's 65 columns: the kernel runs whole panels (80 columns with AVX2's 16-float panels, 96 with
    AVX-512's 32; zeros past 65) and returns the first 65, a row at a time as in a pass, bit for bit."""
    if native.kernel() is None:
        pytest.skip(native.backend())
    panel = native.kernel().linear_panel_bytes() // 4  # floats
    assert panel in (16, 32)
    weight, bias = layer(64, 65, torch.float32)
    lin = Linear(weight, bias)
    assert lin.fn is not None and lin.width == -(-65 // panel) * panel
    x = torch.randn(7, 64)
    got = lin(x)
    assert got.shape == (7, 65)
    assert float((got - addmm(weight, bias, x)).abs().max()) < TOL[torch.float32]
    assert torch.equal(got, torch.cat([lin(x[i : i + 1]) for i in range(7)]))


def test_inputs_it_cannot_take_go_to_addmm():
    lin = Linear(*layer(64, 64, torch.float32))
    with pytest.raises(RuntimeError):  # the wrong width reaches addmm, which says so: never a read past x
        lin(torch.randn(2, 63))
    got = lin(torch.randn(2, 64, dtype=torch.float64).float().t().contiguous().t())  # a strided input
    assert got.shape == (2, 64)


def test_switched_off(rebuild):
    rebuild.setenv("SPECVIZ_KERNEL", "0")
    assert native.kernel() is None and native.backend() == "torch alone (SPECVIZ_KERNEL=0)"
    weight, bias = layer(256, 256, torch.float32)
    lin = Linear(weight, bias)
    x = torch.randn(4, 256)
    # torch.addmm itself, on the weight laid out as Linear keeps it: MKL may sum a transposed view's products in
    # another order (seen on an Intel Xeon, family 6 model 85), so only the same layout is equal bit for bit.
    assert lin.fn is None and torch.equal(lin(x), torch.addmm(bias, x, weight.t().contiguous()))


def test_a_failed_build_says_why_in_one_line(rebuild, tmp_path):
    bad = tmp_path / "cxx"
    bad.write_text("#!/bin/sh\necho 'cxx: error: no such flag' >&2\nexit 1\n")
    bad.chmod(0o755)
    rebuild.setenv("CXX", str(bad))
    assert native.kernel() is None
    assert native.backend() == "torch alone (the kernels did not build: cxx: error: no such flag)"
    rebuild.setenv("CXX", str(tmp_path / "missing"))
    native._build.cache_clear()
    assert native.kernel() is None and native.backend().startswith("torch alone (the kernels did not build: ")
    assert "\n" not in native.backend()


@pytest.mark.slow  # builds the kernels again with the C++ compiler (~4-7 s)
def test_without_march_native_it_builds_for_any_cpu(rebuild, tmp_path):
    real = native.compiler()
    if real is None:
        pytest.skip("no C++ compiler")
    cxx = tmp_path / "cxx"  # a compiler that does not know -march=native (older Apple clang on arm64)
    cxx.write_text(
        f'#!/bin/sh\ncase "$*" in *-march=native*) echo "unknown flag" >&2; exit 1;; esac\nexec {real} "$@"\n'
    )
    cxx.chmod(0o755)
    rebuild.setenv("CXX", str(cxx))
    assert native.kernel() is not None and native.backend() == "few-rows kernels (cxx -O3)"
    weight, bias = layer(256, 768, torch.float32)
    x = torch.randn(5, 256)
    assert float((Linear(weight, bias)(x) - addmm(weight, bias, x)).abs().max()) < TOL[torch.float32]


def _passes(model) -> list[torch.Tensor]:
    """Logits of a prefill, one-token and verify passes of ``model`` on the kernels built now (fresh lean
    weights: the panels' width is the build's)."""
    from specviz.kernels import cached_model

    cached_model._WEIGHTS.pop(model, None)
    lm = cached_model.CachedModel(model)
    ctx = [(i * 7 + i // 3) % model.config.vocab_size for i in range(260)]
    out = [lm.forward(ctx[:250], list(range(250)))]  # a prefill: tiles of rows, causal attention
    lm.keep(list(range(200)), ctx[:200])
    for n in (1, 5, 9, 13):  # a one-token pass, and chains after the cache
        out.append(lm.forward(ctx[200 : 200 + n], list(range(200, 200 + n))))
    cached_model._WEIGHTS.pop(model, None)
    return out


@pytest.mark.slow  # builds the kernels again with the C++ compiler (~4-7 s)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_avx512_and_avx2_builds_give_the_same_bits(rebuild, tmp_path, dtype):
    """Where the CPU has AVX-512 the products and attention's weighted sums run on 64-byte vectors (vec.h's
    WideVec). A lane there is one column or one dimension, summed in the same order at either width, so
    the whole pass's logits must be bit for bit those of a build without AVX-512."""
    from models.checkpoint import load_checkpoint

    lib = native.kernel()
    if lib is None or lib.linear_panel_bytes() != 128:
        pytest.skip("the CPU (or the build) has no AVX-512: one width only")
    model = load_checkpoint("target", dtype=dtype).model
    wide = _passes(model)
    real = native.compiler()
    cxx = tmp_path / "cxx"  # the same compiler, told not to use AVX-512
    cxx.write_text(f'#!/bin/sh\nexec {real} "$@" -mno-avx512f\n')
    cxx.chmod(0o755)
    rebuild.setenv("CXX", str(cxx))
    native._build.cache_clear()
    assert native.kernel().linear_panel_bytes() == 64
    narrow = _passes(model)
    for a, b in zip(wide, narrow, strict=True):
        assert torch.equal(a, b)
