"""A vLLM /metrics snapshot read (specviz/teaching/vllm.py) and drawn (specviz/charts/vllm.py): the shipped
example's numbers worked out by hand from its lines, several label sets summed, a snapshot without the
per-position counter, every malformed input as one SnapshotError line, the α fit against known α (exact and
simulated as vLLM counts), and the K-that-pays arithmetic."""

import math
import random
import re

import plotly.graph_objects as go
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from specviz.charts import vllm as charts
from specviz.teaching import vllm
from specviz.teaching.vllm import SnapshotError, fit_alpha, k_that_pays, parse_snapshot

LABELS = 'engine="0",model_name="m"'


def snapshot(drafts, draft_tokens, accepted, per_pos=None, labels=LABELS) -> str:
    """The four counters in the text format, one label set, written out line by line."""
    lines = [f"vllm:spec_decode_num_drafts_total{{{labels}}} {drafts}",
             f"vllm:spec_decode_num_draft_tokens_total{{{labels}}} {draft_tokens}",
             f"vllm:spec_decode_num_accepted_tokens_total{{{labels}}} {accepted}"]  # fmt: skip
    lines += [f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="{i}"}} {v}'
              for i, v in enumerate(per_pos or [])]  # fmt: skip
    return "\n".join(lines) + "\n"


def test_the_example_snapshot_by_hand():
    """The example's lines: 12000 drafts, 48000 draft tokens, 23710 accepted, 9180/6700/4690/3140 by position."""
    s = parse_snapshot(vllm.load_example())
    assert (s.drafts, s.draft_tokens, s.accepted) == (12000, 48000, 23710)
    assert s.accepted_per_pos == [9180, 6700, 4690, 3140] and s.unplaced == 0
    assert s.label_sets == 1 and s.models == ["meta-llama/Llama-3.1-8B-Instruct"]
    assert s.k == 4 and s.k_mean == 4.0
    assert s.mean_acceptance_length == pytest.approx(2.975833333, abs=1e-9)  # 1 + 23710 / 12000
    assert s.acceptance_rate == pytest.approx(0.4939583333, abs=1e-9)  # 23710 / 48000
    assert s.by_position == pytest.approx([0.765, 0.5583333333, 0.3908333333, 0.2616666667], abs=1e-9)
    assert s.conditional == pytest.approx([0.765, 6700 / 9180, 4690 / 6700, 3140 / 4690])
    a = s.alpha
    assert 1 + a + a**2 + a**3 + a**4 == pytest.approx(s.mean_acceptance_length, abs=1e-12)
    # cut to K' tokens: 1 + (9180 + ... up to K') / 12000; cut to vLLM's own K, the mean itself
    assert s.cut_lengths == pytest.approx([1.765, 1.765 + 6700 / 12000, 1.765 + 11390 / 12000, 1 + 23710 / 12000])


def test_a_file_as_editors_save_it():
    """Windows line ends and a byte-order mark read as the same snapshot."""
    text = vllm.load_example()
    for data in (text.replace("\n", "\r\n").encode(), "\ufeff".encode() + text.encode(), "\ufeff" + text):
        assert parse_snapshot(vllm.read_text(data)) == parse_snapshot(text)


def test_label_sets_are_summed():
    """Two engines of one model and one engine of another, written by prometheus_client as vLLM writes them
    (with their _created samples and an unrelated gauge), sum position by position."""
    reg = CollectorRegistry()
    names = ["vllm:spec_decode_num_drafts", "vllm:spec_decode_num_draft_tokens", "vllm:spec_decode_num_accepted_tokens"]
    counters = [Counter(n, "doc", ["model_name", "engine"], registry=reg) for n in names]
    per_pos = Counter("vllm:spec_decode_num_accepted_tokens_per_pos", "doc", ["model_name", "engine", "position"],
                      registry=reg)  # fmt: skip
    Gauge("vllm:num_requests_running", "doc", ["model_name", "engine"], registry=reg).labels("a", "0").set(7)
    sets = {("a", "0"): (100, 300, 150, [70, 50, 30]), ("a", "1"): (50, 150, 40, [25, 10, 5]),
            ("b", "0"): (10, 30, 0, [0, 0, 0])}  # fmt: skip
    for labels, (d, t, a, pos) in sets.items():
        for c, v in zip(counters, (d, t, a), strict=True):
            c.labels(*labels).inc(v)
        for i, v in enumerate(pos):
            per_pos.labels(*labels, str(i)).inc(v)
    s = parse_snapshot(generate_latest(reg).decode())
    assert (s.drafts, s.draft_tokens, s.accepted) == (160, 480, 190)
    assert s.accepted_per_pos == [95, 60, 35] and s.k == 3
    assert s.label_sets == 3 and sorted(s.models) == ["a", "b"]
    assert s.mean_acceptance_length == pytest.approx(1 + 190 / 160)


def test_a_snapshot_without_the_per_position_counter():
    """Older vLLM: the three totals only. K is the mean draft length rounded up, and the chart says what is missing."""
    s = parse_snapshot(snapshot(10, 35, 20))
    assert s.accepted_per_pos == [] and s.by_position == [] and s.k_mean == 3.5 and s.k == 4
    assert s.unplaced == 0
    fig = charts.position_bars(s)
    assert not fig.data and vllm.PER_POS in fig.layout.annotations[0].text
    assert 1 + s.alpha + s.alpha**2 + s.alpha**3 + s.alpha**4 == pytest.approx(3.0)


BAD = [
    ("not utf-8", b"vllm:x 1\n\xff\xfe\n", "not UTF-8 text"),
    ("a word for a value", "# HELP x y\nvllm:spec_decode_num_drafts_total 1\nvllm:a{b=\"1\"} many\n", "line 3 is not Prometheus text"),
    ("an unquoted label", 'ok 1\nvllm:a{b=1} 2\n', "line 2 is not Prometheus text"),
    ("html", "<html><body>502 Bad Gateway</body></html>\n", "line 1 is not Prometheus text"),
    ("no vllm counters", "process_cpu_seconds_total 3.0\n", "no vllm:spec_decode_num_drafts_total"),
    ("cut short", 'vllm:spec_decode_num_drafts_total{engine="0"} 3\n', "the snapshot is cut short"),
    ("no drafts yet", snapshot(0, 0, 0), "0 drafts"),
    ("a negative counter", snapshot(-1, 3, 1), "a counter is a finite number"),
    ("NaN", snapshot(3, "NaN", 1), "a counter is a finite number"),
    ("one label set twice", snapshot(3, 9, 2) + snapshot(3, 9, 2), "appears twice"),
    ("more accepted than drafted", snapshot(3, 6, 7), "7 accepted tokens but 6 drafted"),
    ("more accepted than K allows", snapshot(3, 9, 7, [3, 2]), "at most K = 2"),
    ("a gap in the positions", snapshot(3, 9, 3, [2]) + f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{LABELS},position="2"}} 1\n', "no position 1"),
    ("a position that is not a number", f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{LABELS},position="x"}} 1\n', "positions are 0 to"),
    ("a position in superscript", f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{LABELS},position="²"}} 1\n', "positions are 0 to"),
    ("a position past any K", f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{LABELS},position="64"}} 1\n', "positions are 0 to"),
    ("counts that rise with position", snapshot(3, 9, 4, [1, 3]), "rises with position"),
    ("too large", "#" * (vllm.MAX_BYTES + 1), "bytes"),
]  # fmt: skip


@pytest.mark.parametrize("case", BAD, ids=[b[0] for b in BAD])
def test_malformed_input_is_one_line(case):
    _, data, words = case
    with pytest.raises(SnapshotError) as e:
        parse_snapshot(vllm.read_text(data))
    assert isinstance(e.value, ValueError) and words in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("alpha,k", [(0.0, 3), (0.3, 1), (0.62, 5), (0.9, 7), (1.0, 4)])
def test_the_fit_recovers_a_known_alpha(alpha, k):
    """Counters as vLLM would hold them for a chain accepted position by position with chance α:
    accepted at position i = drafts · α^(i+1). The fit gives α back, and α^i matches every position."""
    drafts = 1_000_000
    per_pos = [drafts * alpha ** (i + 1) for i in range(k)]
    s = parse_snapshot(snapshot(drafts, drafts * k, sum(per_pos), per_pos))
    assert s.alpha == pytest.approx(alpha, abs=1e-9)
    assert s.by_position == pytest.approx([s.alpha ** (i + 1) for i in range(k)], abs=1e-9)


def test_the_fit_recovers_alpha_from_simulated_rounds():
    """200,000 rounds of K = 5 drafted, each position accepted with chance 0.7 until the first rejection, counted as
    vLLM's scheduler counts them (the round's drafts, draft tokens, accepted, and +1 at every accepted position):
    the fitted α lies within 4 standard errors of 0.7 (the mean length's standard error, through the curve's slope)."""
    rng, k, alpha, rounds = random.Random(7), 5, 0.7, 200_000
    per_pos, lengths = [0] * k, []
    for _ in range(rounds):
        n = 0
        while n < k and rng.random() < alpha:
            n += 1
        lengths.append(n)
        for i in range(n):
            per_pos[i] += 1
    s = parse_snapshot(snapshot(rounds, rounds * k, sum(lengths), per_pos))
    mean = sum(lengths) / rounds
    se = math.sqrt(sum((x - mean) ** 2 for x in lengths) / (rounds - 1) / rounds)
    slope = sum(i * alpha ** (i - 1) for i in range(1, k + 1))  # d/dα of Σ α^i: the mean length per unit α
    assert abs(s.alpha - alpha) < 4 * se / slope


def test_fit_alpha_is_the_inverse_of_the_curve():
    assert fit_alpha(1.0, 4) == pytest.approx(0, abs=1e-12) and fit_alpha(5.0, 4) == pytest.approx(1, abs=1e-12)
    fits = [fit_alpha(m, 3) for m in (1.2, 1.8, 2.6, 3.9)]
    assert fits == sorted(fits)  # a longer mean needs a larger α
    with pytest.raises(ValueError, match="between 1 and 5"):
        fit_alpha(5.5, 4)
    with pytest.raises(ValueError, match="K must be 1 or more"):
        fit_alpha(1.0, 0)


def test_k_that_pays_by_hand():
    """α = 0.5, s = 0.1, c = 0.2: K = 1 emits 1.5 tokens for 1 + 0.1 + 0.2 = 1.3 passes; K = 2, 1.75 for 1.6;
    K = 3, 1.875 for 1.9."""
    rows = k_that_pays(0.5, 0.1, 0.2, 3)
    assert [r["k"] for r in rows] == [1, 2, 3]
    assert [r["expected"] for r in rows] == pytest.approx([1.5, 1.75, 1.875])
    assert [r["cost"] for r in rows] == pytest.approx([1.3, 1.6, 1.9])
    assert [r["speedup"] for r in rows] == pytest.approx([1.5 / 1.3, 1.75 / 1.6, 1.875 / 1.9])
    free = k_that_pays(0.5, 0, 0, 6)  # nothing costs anything: every K pays more than the one before
    assert [r["speedup"] for r in free] == sorted(r["speedup"] for r in free)
    dear = k_that_pays(0.2, 0.5, 1.0, 4)  # a draft as dear as a pass at a low α: speculation never pays
    assert all(r["speedup"] < 1 for r in dear)
    cut = k_that_pays(0.5, 0.1, 0.2, 3, cut=[1.6, 2.0])  # vLLM's rounds, cut to K = 1 and 2: no α involved
    assert [r["measured_speedup"] for r in cut] == pytest.approx([1.6 / 1.3, 2.0 / 1.6, None])
    assert all(r["measured"] is None for r in rows)
    with pytest.raises(ValueError, match="α must be between 0 and 1"):
        k_that_pays(1.5, 0, 0, 3)
    with pytest.raises(ValueError, match="largest K"):
        k_that_pays(0.5, 0, 0, 0)


def test_the_figures():
    s = parse_snapshot(vllm.load_example())
    rows = k_that_pays(s.alpha, 0.05, 0.05, 8, s.cut_lengths)
    figs = [charts.position_bars(s), charts.expected_curve(s, 8), charts.pays_bars(rows, s.k)]
    for fig in figs:
        go.Figure(fig.to_dict())  # the charts skip plotly's validation; it raises here on a bad property
    positions, curve, pays = figs
    assert list(positions.data[0].y) == s.by_position
    point, cut = (next(d for d in curve.data if d.name.startswith(w)) for w in ("vLLM: ", "vLLM's rounds cut"))
    assert list(point.x) == [4] and list(point.y) == [s.mean_acceptance_length]
    assert list(cut.x) == [1, 2, 3, 4] and list(cut.y) == s.cut_lengths
    assert list(pays.data[1].y) == [r["measured_speedup"] for r in rows[:4]]  # vLLM's rounds stop at its K
    assert curve.data[0].y[3] == pytest.approx(s.mean_acceptance_length)  # the fitted curve passes through it
    assert [a.x for a in pays.layout.annotations if a.text == "vLLM's K"] == [4]  # the arrow at vLLM's K = 4
    many = charts.pays_bars(k_that_pays(s.alpha, 0.05, 0.05, 64), s.k)  # 64 bars: no labels, a tick every 8
    assert many.data[0].text is None and many.layout.xaxis.dtick == 8
    long = parse_snapshot(snapshot(100, 1200, 0, [0] * 12))  # K = 12 in a half-width column: no labels, ticks by 2
    assert charts.position_bars(long).data[0].text is None and charts.position_bars(long).layout.xaxis.dtick == 2
    words = re.sub(r"<[^>]+>", " ", charts.pays_bars(rows[:3], s.k).layout.title.text).split()
    assert "vLLM's K = 4: off the chart" in " ".join(words)  # K = 1..3 priced: no arrow
    best = max(rows, key=lambda r: r["speedup"])
    assert f"best K = {best['k']}" in pays.layout.title.text


LINE = st.sampled_from(vllm.load_example().splitlines() + ["", "# TYPE x counter", 'a{b="c"} 1', "a{b=c} 1", "{", "}"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(LINE, st.text(max_size=40)), max_size=12), st.binary(max_size=20))
def test_any_text_is_read_or_refused_in_one_line(lines, noise):
    """Lines of the example mixed with arbitrary text and bytes: a snapshot, or one SnapshotError line, never
    another exception (the page catches SnapshotError alone)."""
    for data in ("\n".join(lines) + "\n", "\n".join(lines).encode() + noise):
        try:
            parse_snapshot(vllm.read_text(data))
        except SnapshotError as e:
            assert "\n" not in str(e)
