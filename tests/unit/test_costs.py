"""The verify-cost curve adaptive K prices drafts with: the reference figures, interpolation between
measured sizes, and a measurement that yields a usable curve and reaches the rounds it is given to."""

import math

import pytest

from specviz.adaptive.costs import N_MAX, REFERENCE, TREE_MASK, CostCurve, cpu_name, describe_cpu, interpolate, measure
from specviz.core.engine import Generation
from specviz.core.settings import Settings


def is_curve(values) -> bool:
    """Whether ``values`` can be a CostCurve's verify: v(1) = 1, every v finite and at least 1."""
    return bool(values) and values[0] == 1.0 and all(math.isfinite(v) and v >= 1.0 for v in values)


def test_the_reference_curve_is_the_reference_machines_two_lines():
    v = REFERENCE.v
    assert v(0) == v(1) == 1.0
    assert v(2) == pytest.approx(1.11) and v(8) == pytest.approx(1.11 + 6 * 0.0375)
    assert v(9) == pytest.approx(1.51) and v(17) == pytest.approx(1.51 + 8 * 0.035 + 64 * 6e-5)
    assert v(5, tree=True) == pytest.approx(v(5) + TREE_MASK) and v(1, tree=True) == 1.0
    assert len(REFERENCE.verify) == N_MAX and is_curve(REFERENCE.verify)
    assert REFERENCE.summary() == "reference machine: v(2) 1.11, v(5) 1.22, v(9) 1.51, v(17) 1.79"


def test_interpolate_joins_the_measured_sizes_with_straight_lines():
    v = interpolate({1: 1.0, 2: 1.5, 4: 1.3, 8: 2.1}, 10)
    assert v[:4] == (1.0, 1.5, pytest.approx(1.4), 1.3)  # a dip is kept: it is what was measured
    assert v[5] == pytest.approx(1.7)  # N = 6, halfway from 4 to 8
    assert v[8:] == (pytest.approx(2.3), pytest.approx(2.5))  # past the last: the line through the last two
    assert CostCurve(v, "t").v(40) == v[-1]  # past the table: its last figure
    # a dip between the last two sizes is kept there, but never extended past them
    dip = interpolate({1: 1.0, 64: 4.0, 96: 6.0, 128: 5.5}, 256)
    assert dip[127] == 5.5 and dip[111] == pytest.approx(5.75) and dip[128:] == (5.5,) * 128


def test_a_measured_curve_is_a_curve_and_reaches_the_rounds(target):
    """Figures are timings, so they are not asserted; what is: the shape of the result, where it says it
    comes from, and that a run priced with it records those costs."""
    ticks = []
    curve = measure(target.model, repeats=2, progress=lambda *a: ticks.append(a))
    assert ticks == [(1, 2), (2, 2)]
    assert len(curve.verify) == N_MAX and is_curve(curve.verify)
    assert curve.source == f"measured on {cpu_name()}, 1 thread" and cpu_name()
    # a curve where no draft can pay: adaptive K plain-decodes every round, and each record says why
    dear = CostCurve(interpolate({1: 1.0, 2: 50.0, 3: 100.0}), "dear")
    prompt = target.tokenizer.encode("ROMEO:\n")
    gen = Generation(target, prompt, Settings(drafter="distilled", k=4, k_auto=True, max_new_tokens=12), costs=dear)
    trace = gen.run()
    assert gen.adaptive.curve is dear
    assert all(r.k_choice.k == 0 for r in trace.rounds) and trace.rounds[0].k_choice.costs[1] >= 50.0
    cheap = Generation(
        target, prompt, Settings(drafter="distilled", k=4, k_auto=True, temperature=0, max_new_tokens=12)
    )
    assert any(r.k_choice.k > 0 for r in cheap.run().rounds)  # the same run on the reference drafts


def test_a_cpu_is_named_with_its_family_model_and_widest_vectors():
    """Two VMs may both call their CPU "AMD EPYC" (a Zen 3, a Zen 5), with one-token passes 4x apart: a bench
    row and a cost curve say which, from the first processor's block of /proc/cpuinfo."""
    zen5 = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\nmodel name\t: AMD EPYC\n"
    zen5 += "flags\t\t: fpu sse2 avx2 avx512f\n\nprocessor\t: 1\nmodel name\t: something else\n"
    assert describe_cpu(zen5) == "AMD EPYC (family 26, model 2, AVX-512)"
    assert describe_cpu(zen5.replace(" avx512f", "")) == "AMD EPYC (family 26, model 2, AVX2)"
    assert describe_cpu("Model\t: Raspberry Pi 5\nFeatures\t: fp asimd evtstrm\n") == "Raspberry Pi 5 (NEON)"
    assert describe_cpu("model name\t: Some CPU\n") == "Some CPU"
    with pytest.raises(ValueError):  # an ARM server's first block names no model: cpu_name asks platform instead
        describe_cpu("processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd\n\nprocessor\t: 1\n")
    assert cpu_name()  # this machine: a name, whatever its /proc/cpuinfo holds
