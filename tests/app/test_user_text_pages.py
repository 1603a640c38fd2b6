"""User and model text reaches the page as text, in AppTest: the markdown sent is the escaped text."""

from conftest import ECHO_PROMPT, PAYLOAD, open_page

from models.tokenizer import UnknownCharactersError
from specviz.charts import label_text
from specviz.core.engine import Generation
from specviz.core.markup import cut, md
from specviz.core.settings import Settings


def test_url_parameters_and_prompt_show_as_text(target):
    at = open_page("pages/step.py", {"k": PAYLOAD, "temperature": PAYLOAD, "drafter": PAYLOAD, "preset": PAYLOAD})
    warnings = [w.value for w in at.sidebar.warning]
    assert len(warnings) == 4 and all(md(cut(PAYLOAD)) in w for w in warnings), warnings
    at = open_page("pages/step.py", {"prompt": PAYLOAD})
    assert at.text_area(key="ctl_prompt").value == PAYLOAD  # a widget: literal
    unknown = UnknownCharactersError(target.tokenizer.unknown_chars(PAYLOAD))
    assert md(unknown) in at.error[0].value


def test_home_prompt_shows_as_text():
    at = open_page("pages/home.py")
    at.text_area[0].set_value(PAYLOAD)
    next(b for b in at.button if b.label == "Generate").click()
    at.run()
    assert "\\*" in at.error[0].value and "The prompt has characters not in the vocabulary" in at.error[0].value


def test_model_output_echoing_the_prompt_shows_as_text(target):
    """The trie drafts what the prompt repeats: its headings quote the drafted text."""
    settings = Settings(drafter="trie", temperature=0.0, max_new_tokens=20)
    gen = Generation(target, target.tokenizer.encode(ECHO_PROMPT), settings)
    r = gen.step()
    assert set(label_text(target.tokenizer.chars, r.draft_tokens)) & set("$:&")  # the echo has markup characters
    at = open_page(
        "pages/tree.py", {"prompt": ECHO_PROMPT, "drafter": "trie", "temperature": "0", "max_new_tokens": "20"}
    )
    at.button(key="nav_next").click()
    at.run()
    heading = at.subheader[0].value
    assert md(label_text(target.tokenizer.chars, r.draft_notes["matched_prefix"])) in heading, heading
