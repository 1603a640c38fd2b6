"""The bench's peer: transformers running the same weights (specviz.training.export_hf), for the
vs-transformers suite (specviz/bench/runner.py). Its greedy ``generate`` and its prompt-lookup
decoding are what transformers can do that our drafters do too (``peer_drafters``); each run is timed
as ours are, on a quiet heap (specviz/bench/timing.py)."""

import os
import time

import torch

from models.checkpoint import Checkpoint
from specviz.bench.timing import Run, quiet_heap
from specviz.drafters import drafter_class, drafter_names

HF_MAX_NEW_TOKENS = 128


def peer_drafters(k: int) -> tuple[str, ...]:
    """The drafters transformers can run too (Drafter.peer): plain greedy generate, prompt lookup."""
    return tuple(d for d in drafter_names() if drafter_class(d).peer(k) is not None)


def hf_run(hf, prompt, drafter, k, n, calls, kwargs: dict | None = None) -> Run:
    """transformers' generate for ``drafter`` (its Drafter.peer arguments, or ``kwargs``), timed."""
    kwargs = drafter_class(drafter).peer(k) if kwargs is None else kwargs
    ids = torch.tensor([prompt])
    before = calls[0]
    quiet_heap()
    t0 = time.perf_counter()
    with torch.no_grad():
        out = hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, min_new_tokens=n,
                          do_sample=False, use_cache=True, **kwargs)  # fmt: skip
    seconds = time.perf_counter() - t0
    tokens = out[0, len(prompt) :].tolist()
    if len(tokens) != n:
        raise RuntimeError(f"transformers generated {len(tokens)} tokens, asked for {n}")
    return Run(tokens, seconds, calls[0] - before)  # its first pass (the prefill) emits a token


def load_hf(target: Checkpoint):
    """The target as a transformers model, and a one-element list counting its forward passes."""
    os.environ["HF_HUB_OFFLINE"] = "1"  # nothing may be downloaded (nothing needs to be: see hf_model)
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    import transformers

    from specviz.training.export_hf import hf_model

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    model = hf_model(target)
    calls = [0]
    model.register_forward_pre_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    return model, calls


def transformers_available() -> bool:
    try:
        import transformers  # noqa: F401
    except ImportError:
        return False
    return True
