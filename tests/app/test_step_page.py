"""The step-through page in AppTest: navigation, restarts, URL state, bad input, isolation,
and chart specs that hold the trace's numbers."""

import pytest
from conftest import chart_specs, click, open_page, shown


def run_of(at):
    return at.session_state["run"]


def test_play_and_pause_set_the_state_their_label_shows():
    """Play starts autoplay and the button then reads Pause; Pause stops it and the button reads Play again."""
    at = open_page("pages/step.py", {"k": "3", "max_new_tokens": "40"})
    assert at.button(key="nav_play").label == "Play" and not at.session_state["run"].rounds
    click(at, "nav_play")
    assert at.session_state["playing"] is True and at.button(key="nav_play").label == "Pause"
    click(at, "nav_play")
    assert at.session_state["playing"] is False and at.button(key="nav_play").label == "Play"


def test_next_previous_reset_scrub_and_end():
    at = open_page("pages/step.py", {"k": "3", "max_new_tokens": "40"})
    for _ in range(3):
        click(at, "nav_next")
    s = run_of(at)
    assert s.cursor == 3 and len(s.rounds) == 3
    first = s.rounds[0]
    click(at, "nav_back")
    assert s.cursor == 2 and len(s.rounds) == 3  # going back never recomputes
    click(at, "nav_reset")
    assert s.cursor == 0 and s.rounds[0] is first
    at.slider(key="scrub").set_value(2).run()
    assert not at.exception and s.cursor == 2
    click(at, "nav_end")
    assert s.at_end and s.generation.generated == 40
    assert at.button(key="nav_next").disabled
    assert [b.label for b in at.get("download_button")] == [
        "Download the trace (JSON)", "Download the verified positions (CSV)", "Download an offline copy (HTML)"]  # fmt: skip


def test_changing_k_or_temperature_restarts_the_run_and_the_url_follows():
    at = open_page("pages/step.py")
    click(at, "nav_next")
    old = run_of(at)
    at.sidebar.slider(key="ctl_k").set_value(6).run()
    new = run_of(at)
    assert new is not old and new.cursor == 0 and new.generation.settings.k == 6
    assert at.query_params["k"] == ["6"] or at.query_params["k"] == "6"
    click(at, "nav_next")
    at.sidebar.slider(key="ctl_temperature").set_value(0.0).run()
    assert run_of(at).cursor == 0 and run_of(at).generation.settings.temperature == 0.0


def test_a_shared_link_opens_the_same_run():
    query = {"drafter": "prompt-lookup", "k": "5", "temperature": "0.0", "preset": "Repetitive", "seed": "7"}
    a, b = open_page("pages/step.py", query), open_page("pages/step.py", query)
    for at in (a, b):
        assert at.sidebar.selectbox(key="ctl_drafter").value == "prompt-lookup"
        assert at.sidebar.selectbox(key="ctl_preset").value == "Repetitive"
        for _ in range(3):
            click(at, "nav_next")
    ta, tb = run_of(a).generation.trace, run_of(b).generation.trace
    assert ta.to_json(timings=False) == tb.to_json(timings=False)


def test_two_sessions_never_share_state():
    a, b = open_page("pages/step.py"), open_page("pages/step.py")
    click(a, "nav_next")
    click(a, "nav_next")
    a.sidebar.selectbox(key="ctl_drafter").set_value("bigram").run()
    click(a, "nav_next")
    assert run_of(b).cursor == 0 and run_of(b).generation.settings.drafter == "trigram"
    assert run_of(a) is not run_of(b) and run_of(a).generation.settings.drafter == "bigram"


def test_chart_specs_hold_the_numbers_of_the_trace():
    at = open_page("pages/step.py", {"k": "4"})
    for _ in range(4):
        click(at, "nav_next")
    r = run_of(at).current
    picker = at.button_group(key=f"pq_position_{r.index}")  # the p/q chart's position, one chart at a time
    assert picker.value == next((i for i, p in enumerate(r.positions) if not p.accepted), 0)  # the first rejected
    for i, pos in enumerate(r.positions):
        picker.set_value(i).run()
        charts = chart_specs(at)
        (spec,) = [s for s in charts if s["layout"]["title"]["text"].startswith(f"Depth {pos.depth}:")]
        p_bar = next(d for d in spec["data"] if d["name"] == "p (target)")
        assert pos.p_x in p_bar["y"] and float(pos.p.max()) == pytest.approx(max(p_bar["y"]))
    specs = chart_specs(at)
    titles = [s["layout"]["title"]["text"] for s in specs]
    ledger = next(s for s, t in zip(specs, titles, strict=True) if t.startswith(f"KV cache, round {r.number}"))
    assert ledger["data"][0]["x"] == [r.kv_before] * 3
    table = at.dataframe[0].value
    assert list(table["p(x)"]) == [p.p_x for p in r.positions]
    metrics = {m.label: m.value for m in at.metric}
    tokens = sum(len(x.emitted) for x in run_of(at).rounds[:4])
    assert metrics["Rounds"] == "4" and metrics["Characters"] == str(tokens)
    assert metrics["Tokens/forward"] == f"{tokens / 4:.2f}"


def test_bad_input_gets_a_message_and_the_previous_run_stays():
    at = open_page("pages/step.py")
    click(at, "nav_next")
    click(at, "nav_next")
    kept = run_of(at)
    at.sidebar.text_area(key="ctl_prompt").set_value("<b>x</b> ROMEO").run()
    assert not at.exception
    assert all(f"'{c}'" in shown(at.error[0].value) for c in "<>/")
    assert run_of(at) is kept and kept.cursor == 2 and at.get("plotly_chart")  # still on screen
    at.button(key="drop_chars").click().run()
    assert at.sidebar.text_area(key="ctl_prompt").value == "bxb ROMEO" and not at.error
    at.sidebar.text_area(key="ctl_prompt").set_value("").run()
    assert "empty" in shown(at.error[0].value) and run_of(at).generation.trace.prompt
    at.sidebar.text_area(key="ctl_prompt").set_value("ROMEO:\n" * 60).run()
    assert not at.error and "420 characters" in at.info[0].value and "last 128–256" in at.info[0].value


def test_a_bad_link_still_opens_a_run():
    at = open_page("pages/step.py", {"k": "99", "temperature": "hot"})
    assert run_of(at).generation.settings.k == 4
    warnings = " ".join(shown(w.value) for w in at.sidebar.warning)
    assert "k='99'" in warnings and "temperature='hot'" in warnings


def test_one_round_numbering_everywhere():
    """Round 1 is the first round: the heading, the Rounds count, the scrub slider, the KV charts
    and the text's tooltips all say the same number."""
    at = open_page("pages/step.py", {"k": "4", "max_new_tokens": "60"})
    for _ in range(3):
        click(at, "nav_next")
    r = run_of(at).current
    assert r.number == 3 and at.subheader[0].value.startswith("Round 3:")
    assert {m.label: m.value for m in at.metric}["Rounds"] == "3"
    assert at.slider(key="scrub").value == 3
    specs = chart_specs(at)
    titles = [s["layout"]["title"]["text"] for s in specs]
    assert any(t.startswith("KV cache, round 3:") for t in titles)
    timeline = next(s for s, t in zip(specs, titles, strict=True) if "KV" in t and "round 3" not in t)
    assert timeline["data"][0]["x"] == [1, 2, 3]
    html = "".join(h.proto.body for h in at.get("html"))
    assert "round 3: " in html and "round 0: " not in html


def test_both_layouts_draw_the_same_round_and_the_choice_is_kept():
    """The presenter layout (the default) and the full one show the same round: its heading, its
    totals, its charts; the choice survives a visit to another page."""
    at = open_page("pages/step.py", {"k": "4", "max_new_tokens": "20"})
    click(at, "nav_next")
    assert at.toggle(key="presenter").value

    def shown_round(at):
        titles = sorted(s["layout"]["title"]["text"] for s in chart_specs(at))
        return at.subheader[0].value, {m.label: m.value for m in at.metric}, titles

    presenter = shown_round(at)
    at.toggle(key="presenter").set_value(False).run()
    assert not at.exception and shown_round(at) == presenter
    at.switch_page("pages/atlas.py").run()
    at.switch_page("pages/step.py").run()
    assert not at.exception and not at.toggle(key="presenter").value
