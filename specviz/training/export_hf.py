"""The target as a Hugging Face ``GPT2LMHeadModel``: config.json + model.safetensors.

Our GPT already uses GPT-2's layer names, so the mapping is one to one except for two things:

- GPT-2's c_attn, c_proj and c_fc are ``Conv1D`` layers whose weight is (in, out), the
  transpose of ``nn.Linear``'s (out, in).
- lm_head is tied to wte (``tie_word_embeddings``), so only wte is written.

The config pins what would otherwise silently differ: the activation is exact (erf) GELU, which
is transformers' "gelu" (its "gelu_new", GPT-2's default, is the tanh approximation); layer
norms use torch's default eps 1e-5; every dropout is 0; there is no bos/eos token in a
character vocabulary. Writing needs no transformers, only safetensors.
"""

import json
from pathlib import Path

import torch
from safetensors.torch import save_file

from models.checkpoint import TIED, Checkpoint, atomic_write

CONV1D = (".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight", ".mlp.c_proj.weight")


def hf_config(ckpt: Checkpoint) -> dict:
    """GPT2Config fields (as config.json holds them) for this checkpoint."""
    c = ckpt.config
    assert c.n_embd % c.n_head == 0
    return {
        "architectures": ["GPT2LMHeadModel"],
        "model_type": "gpt2",
        "vocab_size": c.vocab_size,
        "n_positions": c.block_size,
        "n_embd": c.n_embd,
        "n_layer": c.n_layer,
        "n_head": c.n_head,
        "n_inner": None,  # 4 * n_embd, as in models/gpt.py
        "activation_function": "gelu",  # nn.GELU(): exact erf, not gelu_new's tanh approximation
        "layer_norm_epsilon": 1e-5,  # nn.LayerNorm's default
        "resid_pdrop": 0.0,
        "embd_pdrop": 0.0,
        "attn_pdrop": 0.0,
        "scale_attn_weights": True,  # 1/sqrt(head size), as scaled_dot_product_attention does
        "scale_attn_by_inverse_layer_idx": False,
        "reorder_and_upcast_attn": False,
        "tie_word_embeddings": True,
        "bos_token_id": None,  # a character vocabulary has no special tokens
        "eos_token_id": None,
        "use_cache": True,
        "dtype": "float32",
        "specviz_vocab": ckpt.tokenizer.chars,  # id i is the character specviz_vocab[i]
        "specviz_source": str(ckpt.path.name),
    }


def hf_state_dict(ckpt: Checkpoint) -> dict[str, torch.Tensor]:
    """Our state dict under GPT2LMHeadModel's names, float32, Conv1D weights transposed."""
    out = {}
    for name, t in ckpt.model.state_dict().items():
        if name == TIED:
            continue
        t = t.detach().to("cpu", torch.float32)
        out[name] = (t.t() if name.endswith(CONV1D) else t).contiguous()
    return out


def export_hf(ckpt: Checkpoint, out_dir) -> list[Path]:
    """Write config.json and model.safetensors into out_dir (created if missing). Returns the paths."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise NotADirectoryError(f"{out_dir} exists and is not a directory")
    out_dir.mkdir(parents=True, exist_ok=True)
    weights, config = out_dir / "model.safetensors", out_dir / "config.json"
    tensors = hf_state_dict(ckpt)
    # "format": "pt" is what transformers checks for in a safetensors header.
    atomic_write(weights, lambda tmp: save_file(tensors, tmp, metadata={"format": "pt"}))
    text = json.dumps(hf_config(ckpt), indent=2) + "\n"
    atomic_write(config, lambda tmp: Path(tmp).write_text(text))
    return [config, weights]


def hf_model(ckpt: Checkpoint):
    """The same weights as an in-memory transformers GPT2LMHeadModel (needs transformers), eval mode."""
    from transformers import GPT2Config, GPT2LMHeadModel

    fields = {k: v for k, v in hf_config(ckpt).items() if not k.startswith("specviz_") and k != "architectures"}
    model = GPT2LMHeadModel(GPT2Config(**fields))
    missing, unexpected = model.load_state_dict(hf_state_dict(ckpt), strict=False)
    missing = [k for k in missing if k != TIED]  # tied to wte, filled by tie_weights
    if missing or unexpected:
        raise RuntimeError(f"GPT-2 state dict mismatch: missing {missing}, unexpected {unexpected}")
    model.tie_weights()
    return model.float().eval()
