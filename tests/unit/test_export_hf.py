"""export-hf: the target as a transformers GPT2LMHeadModel that loads offline and computes what
ours computes: logits within 1e-4 in float32, greedy output identical token for token."""

import json
import os

import pytest
import torch

from specviz.cli.main import main
from specviz.core.engine import Generation
from specviz.core.settings import Settings
from specviz.teaching.presets import preset

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing may be downloaded
os.environ["TRANSFORMERS_OFFLINE"] = "1"
import transformers  # noqa: E402  (after the two lines above); a dev dependency, so no skip if missing


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("hf") / "target-gpt2"  # does not exist yet: export-hf creates it
    assert main(["export-hf", str(out)]) == 0
    return out


def test_files_and_config(exported, target, capsys):
    assert sorted(p.name for p in exported.iterdir()) == ["config.json", "model.safetensors"]
    config = json.loads((exported / "config.json").read_text())
    c = target.config
    assert config["model_type"] == "gpt2" and config["architectures"] == ["GPT2LMHeadModel"]
    assert (config["n_layer"], config["n_head"], config["n_embd"]) == (c.n_layer, c.n_head, c.n_embd)
    assert (config["vocab_size"], config["n_positions"]) == (c.vocab_size, c.block_size)
    assert config["activation_function"] == "gelu"  # exact GELU, as nn.GELU(); not gelu_new (tanh)
    assert config["layer_norm_epsilon"] == 1e-5 and config["tie_word_embeddings"] is True
    assert config["resid_pdrop"] == config["embd_pdrop"] == config["attn_pdrop"] == 0.0
    assert config["specviz_vocab"] == target.tokenizer.chars


def test_loads_offline_with_every_weight(exported):
    model, info = transformers.GPT2LMHeadModel.from_pretrained(exported, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    assert model.lm_head.weight.data_ptr() == model.transformer.wte.weight.data_ptr()  # tied
    assert model.dtype == torch.float32


@torch.no_grad()
def test_logits_agree_within_1e_4(exported, target):
    model = transformers.GPT2LMHeadModel.from_pretrained(exported).eval()
    text = preset("Quote a passage").text
    ids = target.tokenizer.encode(text)[-target.config.block_size :]  # every position, 0..255
    x = torch.tensor([ids])
    ours, _ = target.model(x, torch.arange(len(ids)))
    theirs = model(x).logits
    assert theirs.shape == ours.shape == (1, len(ids), target.config.vocab_size)
    assert (theirs - ours).abs().max().item() < 1e-4


@torch.no_grad()
def test_greedy_output_identical(exported, target):
    model = transformers.GPT2LMHeadModel.from_pretrained(exported).eval()
    prompt = target.tokenizer.encode(preset("Dialogue").text)[-100:]
    n = target.config.block_size - len(prompt) - 4  # prompt and output in one window (GPT-2 cannot slide it)
    ours = Generation(target, prompt, Settings(drafter="none", temperature=0, max_new_tokens=n)).run().tokens
    ids = torch.tensor([prompt])
    out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, min_new_tokens=n, do_sample=False)
    assert out[0, len(prompt) :].tolist() == ours
    lookup = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, min_new_tokens=n,
                            do_sample=False, prompt_lookup_num_tokens=4)  # fmt: skip
    assert lookup[0, len(prompt) :].tolist() == ours  # prompt lookup is lossless in theirs too


def test_export_into_a_file_is_refused(tmp_path, capsys):
    f = tmp_path / "not-a-dir"
    f.write_text("x")
    assert main(["export-hf", str(f)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err == f"error: {f} exists and is not a folder\n"
    assert main(["export-hf", str(tmp_path / "x"), "--model", "missing.safetensors"]) == 2
    assert capsys.readouterr().err == "error: checkpoint not found: missing.safetensors\n"
