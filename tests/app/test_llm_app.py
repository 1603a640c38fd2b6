"""The app on a real (BPE) model (issue 42): a tiny random Llama saved to a local folder in the test
(tests/llm_models.py) picked as "A local folder": the model check before anything loads, rounds stepped,
tokens shown as pieces with markers and ids, "token" wording, the drafters offered, top-k + rest bars, the
chat toggle, and a bad folder that leaves the run on screen."""

import tempfile
from pathlib import Path

from conftest import click, open_page, rerun

from specviz.llm.choice import FOLDER
from tests.llm_models import folder


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
