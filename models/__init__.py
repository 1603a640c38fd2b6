"""The nanoGPT model, its tokenizer and the shipped checkpoints."""

from models.checkpoint import CHECKPOINT_NAMES, Checkpoint, CheckpointError, load_checkpoint
from models.gpt import GPT, GPTConfig, KVCache, PositionError
from models.tokenizer import CharTokenizer, UnknownCharactersError

__all__ = [
    "CHECKPOINT_NAMES",
    "GPT",
    "Checkpoint",
    "CheckpointError",
    "CharTokenizer",
    "GPTConfig",
    "KVCache",
    "PositionError",
    "UnknownCharactersError",
    "load_checkpoint",
]
