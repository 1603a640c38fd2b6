"""The app on a real (BPE) model (issue 42): a tiny random Llama saved to a local folder in the test
(tests/llm_models.py) picked as "A local folder": the model check before anything loads, rounds stepped,
tokens shown as pieces with markers and ids, "token" wording, the drafters offered, top-k + rest bars, the
chat toggle, and a bad folder that leaves the run on screen."""

import tempfile
from pathlib import Path

from conftest import chart_specs, click, open_page, rerun

from specviz.llm.choice import FOLDER
from tests.llm_models import folder
from ui.model_choice import real_checkpoint


def pick_folder(at, path, dtype: str = "float64"):
    """Pick a local folder in the sidebar (float64 by default: greedy equals plain decoding there)."""
    at.sidebar.selectbox(key="ctl_model_kind").set_value(FOLDER)
    rerun(at)
    at.sidebar.text_input(key="ctl_model_path").set_value(str(path))
    at.sidebar.selectbox(key="ctl_model_dtype").set_value(dtype)
    return rerun(at)


def test_a_local_folder_runs_step_through_in_tokens():
    at = open_page("pages/step.py", {"max_new_tokens": "12", "k": "3"})
    pick_folder(at, folder("llama"))
    assert not at.error, [e.value for e in at.error]
    model = at.session_state["model"]
    assert model.real and model.path == str(folder("llama"))
    offered = at.sidebar.selectbox(key="ctl_drafter").options
    assert "none" in offered and "prompt-lookup" in offered
    assert "trie" not in offered and "distilled" not in offered and "neural" not in offered  # no bpe trait / no draft
    click(at, "nav_next")
    click(at, "nav_next")
    run = at.session_state["run"]
    assert run.cursor == 2 and run.generation.trace.vocab[0] == "<eos>"  # the folder's tokenizer, not 65 characters
    assert run.generation.target.vocab_size == 96


def test_a_bad_folder_is_one_line_and_the_run_on_screen_stays():
    at = open_page("pages/step.py", {"max_new_tokens": "12"})
    click(at, "nav_next")
    run = at.session_state["run"]
    empty = Path(tempfile.mkdtemp(prefix="specviz-empty-"))
    pick_folder(at, empty)
    assert len(at.error) == 1
    line = at.error[0].value
    assert "no transformers model" in line and "\n" not in line and "Traceback" not in line
    assert not at.session_state["model"].real  # still the character GPT
    assert at.session_state["run"] is run and run.cursor == 1  # what was on screen stays
    click(at, "nav_next")
    assert at.session_state["run"] is run and run.cursor == 2


def html_blocks(at) -> str:
    return "".join(h.proto.body for h in at.get("html"))


def test_tokens_show_as_marked_pieces_with_ids_and_the_page_says_token():
    at = open_page("pages/step.py", {"max_new_tokens": "12", "k": "3", "temperature": "0.8"})
    pick_folder(at, folder("llama"))
    at.sidebar.text_area(key="ctl_prompt").set_value("First Citizen:\nhear me speak.")
    rerun(at)
    click(at, "nav_next")
    run = at.session_state["run"]
    trace = run.generation.trace
    body = html_blocks(at)
    assert "\u00b7" in body and "\u21b5" in body  # the prompt's space and newline as markers
    for t in trace.prompt:  # every prompt token in its own span, its id in the hover
        assert f"prompt · id {t}" in body
    labels = [m.label for m in at.metric]
    assert "Tokens" in labels and "Characters" not in labels
    # The p/q chart: the top tokens and a bar for the rest, which is 1 - the shown.
    while not run.current.draft_tokens:
        click(at, "nav_next")
    pq = next(c for c in chart_specs(at) if any(d.get("name") == "p (target)" for d in c["data"]))
    p_bar = next(d for d in pq["data"] if d.get("name") == "p (target)")
    assert p_bar["x"][-1] == "the rest"
    assert abs(p_bar["y"][-1] - (1 - sum(p_bar["y"][:-1]))) < 1e-9


def chat_folder() -> Path:
    """The tiny Llama's folder with a chat template added to its tokenizer (an instruct model's)."""
    import shutil

    from transformers import AutoTokenizer

    out = Path(tempfile.mkdtemp(prefix="specviz-chat-")) / "model"
    shutil.copytree(folder("llama"), out)
    tok = AutoTokenizer.from_pretrained(out)
    tok.chat_template = ("{% for m in messages %}<eos>{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                         "{% if add_generation_prompt %}<eos>assistant: {% endif %}")  # fmt: skip
    tok.save_pretrained(out)
    return out


def test_the_chat_toggle_applies_the_tokenizers_chat_template():
    at = open_page("pages/step.py", {"max_new_tokens": "8"})
    pick_folder(at, folder("llama"))
    assert not at.sidebar.toggle  # no chat template: no toggle
    pick_folder(at, chat_folder())
    at.sidebar.text_area(key="ctl_prompt").set_value("hear me speak")
    rerun(at)
    plain = at.session_state["run"].generation.trace.prompt
    at.sidebar.toggle(key="ctl_chat").set_value(True)
    rerun(at)
    chat = at.session_state["run"].generation.trace.prompt  # the run restarted from the templated prompt
    pieces = real_checkpoint(at.session_state["model"]).tokenizer
    assert pieces.decode(plain) == "hear me speak"
    assert chat == pieces.encode("<eos>user: hear me speak\n<eos>assistant: ") and chat != plain


def on_page(at, page: str):
    at.switch_page(f"pages/{page}.py")
    return rerun(at)


def test_the_lesson_and_the_tree_page_run_on_the_chosen_model():
    at = open_page("pages/step.py", {"max_new_tokens": "12"})
    pick_folder(at, folder("llama"))
    on_page(at, "lesson")
    assert (
        not at.error and at.session_state["lesson_key"][2] == at.session_state["model"]
    )  # the lesson's run: this model
    click(at, "lesson_next")
    assert at.session_state["lesson_step"] == 1 and not at.error
    on_page(at, "tree")
    assert at.button(key="switch_to_suffix") and not any(b.key == "switch_to_trie" for b in at.button)
    click(at, "switch_to_suffix")
    run = at.session_state["run"]
    assert run.generation.settings.drafter == "suffix" and run.generation.trace.vocab[0] == "<eos>"
    click(at, "nav_next")
    assert run.cursor == 1 and not at.error


def test_character_only_pages_say_so_in_one_sentence():
    at = open_page("pages/step.py", {"max_new_tokens": "12"})
    pick_folder(at, folder("llama"))
    for page in ("nasd", "shootout"):
        on_page(at, page)
        assert not at.error and len(at.info) == 1 and "runs on the character GPT only" in at.info[0].value
    on_page(at, "atlas")
    assert "the figures below are the character GPT's" in at.info[0].value


def test_the_real_models_presets_never_trigger_the_apps_warnings():
    from specviz.llm.presets import LLM_PRESETS

    at = open_page("pages/step.py", {"max_new_tokens": "8"})
    pick_folder(at, folder("llama"))
    for p in LLM_PRESETS:
        at.sidebar.selectbox(key="ctl_preset").set_value(p.name)
        rerun(at)
        assert at.sidebar.text_area(key="ctl_prompt").value == p.text
        click(at, "nav_next")
        assert not at.error and not at.warning and not at.info, p.name
        tok = real_checkpoint(at.session_state["model"]).tokenizer
        assert at.session_state["run"].generation.trace.prompt == tok.encode(p.text)


def test_greedy_runs_compare_with_plain_decoding_and_offer_float64():
    from specviz.llm.divergence import first_departure

    at = open_page("pages/step.py", {"max_new_tokens": "16", "temperature": "0.0", "drafter": "prompt-lookup"})
    pick_folder(at, folder("llama"), dtype="float32")
    for _ in range(3):
        click(at, "nav_next")
    click(at, "divergence_check")
    run = at.session_state["run"]
    tokens = [t for r in run.rounds[: run.cursor] for t in r.emitted]
    want = first_departure(real_checkpoint(at.session_state["model"]), run.generation.trace.prompt, tokens)
    if want is None:
        assert f"Equal: the {len(tokens)} tokens so far" in at.success[0].value and "float32" in at.success[0].value
    else:
        assert f"Departed at generated token {want.index + 1}" in at.warning[0].value
    click(at, "divergence_float64")
    assert at.session_state["model"].dtype == "float64" and at.session_state["run"] is not run  # reloaded, restarted
    for _ in range(3):
        click(at, "nav_next")
    click(at, "divergence_check")
    assert "Equal:" in at.success[0].value and "float64" in at.success[0].value  # float64: equal, as it must be
    assert not any(b.key == "divergence_float64" for b in at.button)  # already float64


def test_the_character_models_pages_import_no_transformers():
    import subprocess
    import sys

    code = ("import sys, ui.controls, ui.step, ui.lesson, ui.atlas, ui.divergence_view, ui.model_choice; "
            "print('transformers' in sys.modules)")  # fmt: skip
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"  # the cold start never pays for it


def test_the_exactness_lab_runs_on_the_chosen_model():
    """All K + 1 tokens enumerated with pruning: the page's figures are the lab's own on the folder's model, and
    its chart shows the kept sequences and the rest cell."""
    from specviz.charts.exactness import REST
    from specviz.teaching.exactness import run_exactness

    at = open_page("pages/step.py", {"drafter": "prompt-lookup", "k": "2", "temperature": "1.0"})
    pick_folder(at, folder("llama", scale=1.0))  # peaky: its likeliest sequences are cells of their own
    on_page(at, "exactness")
    assert not at.error and not any("character GPT only" in i.value for i in at.info)
    assert at.radio(key="ex_tokens").disabled  # a real model enumerates every token, pruned
    at.number_input(key="ex_samples").set_value(200)
    at.button(key="ex_run").click()
    rerun(at)
    assert not at.error, [e.value for e in at.error]
    entry = at.session_state["ex_results"][at.session_state["ex_last"]]
    ck = real_checkpoint(at.session_state["model"])
    res = run_exactness(ck, ck.tokenizer.encode(entry["prompt"]), entry["settings"], 200)
    assert res.cells == entry["result"].cells and res.cells
    assert res.p_value is not None and at.metric[1].value == f"{res.p_value:.3g}"
    spec = next(s for s in chart_specs(at) if s["layout"]["title"]["text"].startswith("All 3 tokens"))
    assert REST in spec["data"][0]["x"]
    assert "enumerated with pruning" in " ".join(c.value for c in at.caption)
    assert "characters" not in " ".join(c.value for c in at.caption)  # our sentences say "tokens" here
