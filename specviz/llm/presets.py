"""Prompts for a real (BPE) language model, the app's presets when one is picked: code, a quotation to continue,
a list, and free chat (with an instruct model's chat template, the sidebar's chat toggle). Each is short, so it
stays inside any supported model's window and never triggers the app's long-prompt note."""

from specviz.teaching.presets import Preset

# A quotation given whole, then its opening again: the continuation can copy it (prompt lookup, suffix).
_HAMLET = ("To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n"
           "The slings and arrows of outrageous fortune,\nOr to take arms against a sea of troubles.\n\n"
           "Again, from the top:\nTo be, or not to be,")  # fmt: skip

LLM_PRESETS = (
    Preset(
        "Code",
        "structured",
        'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n    if n < 2:\n        return n\n    return',
        "Code: indentation and names recur, so lookup drafters copy runs.",
    ),  # fmt: skip
    Preset("A quotation to continue", "quote", _HAMLET, "The passage is in the prompt: prompt lookup quotes it."),
    Preset(
        "A list",
        "structured",
        "The planets of the solar system, in order from the Sun:\n1. Mercury\n2. Venus\n3.",
        "A numbered list: the numbers and line breaks are easy guesses.",
    ),  # fmt: skip
    Preset(
        "Free chat",
        "free",
        "What is speculative decoding? Answer in two sentences.",
        "Free text: little to copy; with an instruct model, turn on the chat toggle.",
    ),  # fmt: skip
)


def llm_preset(name: str) -> Preset:
    for p in LLM_PRESETS:
        if p.name == name:
            return p
    raise ValueError(f"unknown preset {name!r}")


def chat_template(tokenizer) -> bool:
    """Whether the tokenizer (a PieceTokenizer) carries a chat template: an instruct model's."""
    return bool(getattr(getattr(tokenizer, "hf", None), "chat_template", None))


def as_chat(tokenizer, text: str) -> str:
    """The prompt as one user turn in the tokenizer's chat template, ready for the assistant's reply."""
    return tokenizer.hf.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                            add_generation_prompt=True)  # fmt: skip
