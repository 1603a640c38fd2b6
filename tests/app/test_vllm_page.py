"""The page "Read vLLM's numbers" in AppTest: it opens on the example snapshot; an upload and a paste replace it;
a malformed file or text is one error line and leaves every number and chart as it was; the example button
brings the example back; a model name and a file name with markup show as typed."""

from conftest import PAYLOAD, chart_specs, click, open_page, rerun, shown

from specviz.core.markup import md
from specviz.teaching import vllm

# Two engines of one model, no per-position counter (an older vLLM)
TWO_ENGINES = "".join(
    f'vllm:spec_decode_num_drafts_total{{engine="{e}",model_name="m"}} 100\n'
    f'vllm:spec_decode_num_draft_tokens_total{{engine="{e}",model_name="m"}} 300\n'
    f'vllm:spec_decode_num_accepted_tokens_total{{engine="{e}",model_name="m"}} {a}\n'
    for e, a in (("0", 120), ("1", 60))
)


def numbers(at) -> dict:
    return {m.label: m.value for m in at.metric}


def test_it_opens_on_the_example():
    at = open_page("pages/vllm.py", timeout=120)
    s = vllm.parse_snapshot(vllm.load_example())
    assert numbers(at)["Mean acceptance length"] == f"{s.mean_acceptance_length:.3f}"
    assert numbers(at)["Fitted α"] == f"{s.alpha:.3f}" and not at.error
    specs = chart_specs(at)
    assert len(specs) == 3 and specs[0]["data"][0]["y"] == s.by_position
    assert "the example snapshot" in shown(at.caption[1].value)


def test_upload_and_paste_replace_it_and_bad_input_keeps_the_screen():
    at = open_page("pages/vllm.py", timeout=120)
    at.file_uploader(key="vllm_file").set_value(("two.txt", TWO_ENGINES.encode(), "text/plain"))
    rerun(at)
    assert numbers(at)["Mean acceptance length"] == f"{1 + 180 / 200:.3f}" and not at.error
    assert "the file two.txt" in shown(at.caption[1].value) and "2 label set(s) summed" in shown(at.caption[1].value)
    assert any(vllm.PER_POS in i.value for i in at.info)  # says what it cannot show
    before, charts_before = numbers(at), chart_specs(at)

    bad = TWO_ENGINES + "vllm:spec_decode_num_drafts_total{engine=2} 5\n"  # line 7: an unquoted label
    at.file_uploader(key="vllm_file").set_value(("bad.txt", bad.encode(), "text/plain"))
    rerun(at)
    assert len(at.error) == 1 and "line 7 is not Prometheus text" in shown(at.error[0].value)
    assert "still shows the file two.txt" in shown(at.error[0].value)
    assert numbers(at) == before and chart_specs(at) == charts_before

    at.text_area(key="vllm_paste").set_value("not a snapshot at all")
    click(at, "vllm_read")
    assert len(at.error) == 1 and shown(at.error[0].value).startswith("The pasted text was not read")
    assert numbers(at) == before and chart_specs(at) == charts_before

    at.text_area(key="vllm_paste").set_value(vllm.load_example())
    click(at, "vllm_read")
    assert not at.error and "the pasted text" in shown(at.caption[1].value)
    assert numbers(at)["Rounds (drafts)"] == "12,000" and not at.info

    at.file_uploader(key="vllm_file").set_value(("two.txt", TWO_ENGINES.encode(), "text/plain"))
    rerun(at)
    click(at, "vllm_example")
    assert not at.error and "the example snapshot" in shown(at.caption[1].value)


def test_user_text_shows_as_text():
    """A model name and a file name with markdown and HTML reach the page escaped."""
    at = open_page("pages/vllm.py", timeout=120)
    named = TWO_ENGINES.replace('model_name="m"', 'model_name="' + PAYLOAD.replace('"', "'") + '"')
    at.file_uploader(key="vllm_file").set_value((PAYLOAD + ".txt", named.encode(), "text/plain"))
    rerun(at)
    assert md(PAYLOAD.replace('"', "'")) in at.caption[1].value and md(PAYLOAD) in at.caption[1].value
    at.file_uploader(key="vllm_file").set_value((PAYLOAD + "2.txt", b"<b>x</b>\n", "text/plain"))
    rerun(at)
    assert md(PAYLOAD) in at.error[0].value and "<b>" not in at.error[0].value
