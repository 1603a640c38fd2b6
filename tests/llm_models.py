"""Tiny real-model folders for the tests, built here (no hub): a BPE tokenizer trained with ``tokenizers`` on a
slice of the corpus (a few lines of Shakespeare where the corpus is absent), and random 2-layer Llama and GPT-2
models from their configs, each saved with save_pretrained as a transformers folder."""

import functools
import tempfile
from pathlib import Path

import torch

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "tinyshakespeare.txt"
FALLBACK = ("First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\n"
            "First Citizen:\nYou are all resolved rather to die than to famish?\n\nAll:\nResolved. resolved.\n") * 8  # fmt: skip
VOCAB = 96  # small: the enumeration tests sum over V^n sequences


def corpus_slice(n: int = 20_000) -> str:
    return CORPUS.read_text()[:n] if CORPUS.is_file() else FALLBACK


@functools.cache
def tokenizer(vocab: int = VOCAB):
    """A SentencePiece-style BPE (spaces as U+2581, merges across them) over the corpus's characters."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    text = corpus_slice()
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="never", split=False)
    tok.decoder = decoders.Metaspace(prepend_scheme="never", split=False)
    alphabet = sorted(set(text.replace(" ", "\u2581")))
    trainer = trainers.BpeTrainer(vocab_size=vocab, initial_alphabet=alphabet, special_tokens=["<eos>"],
                                  show_progress=False)  # fmt: skip
    tok.train_from_iterator([text[i : i + 200] for i in range(0, len(text), 200)], trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>")


def config(kind: str, vocab: int, scale: float):
    from transformers import GPT2Config, LlamaConfig

    if kind == "llama":
        return LlamaConfig(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                           initializer_range=scale, bos_token_id=0, eos_token_id=0, tie_word_embeddings=False)  # fmt: skip
    return GPT2Config(vocab_size=vocab, n_embd=64, n_layer=2, n_head=4, n_positions=256, initializer_range=scale,
                      bos_token_id=0, eos_token_id=0)  # fmt: skip


@functools.cache
def folder(kind: str, seed: int = 0, scale: float = 0.2) -> Path:
    """A random 2-layer model of ``kind`` ("llama", "gpt2") with the test tokenizer, saved to a temporary folder
    (kept for the session). ``scale``: the init's standard deviation; larger makes its distributions peakier."""
    from transformers import AutoModelForCausalLM

    tok = tokenizer()
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config(kind, len(tok), scale))
    out = Path(tempfile.mkdtemp(prefix=f"specviz-{kind}-"))
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@functools.cache
def checkpoint(kind: str, dtype: torch.dtype = torch.float64, seed: int = 0, scale: float = 0.2):
    """The folder's model loaded by specviz (specviz/llm/load.py)."""
    from specviz.llm.load import load_model

    return load_model(str(folder(kind, seed, scale)), dtype)
