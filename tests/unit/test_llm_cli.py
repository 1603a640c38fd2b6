"""Real models on the command line (specviz/cli/flags.py prepare_llm, specviz/llm/load.py): a tiny local folder
runs end to end, and every bad input is one line and exit status 2, found before any weight loads."""

import dataclasses
import json
import shutil

import numpy as np
import pytest
import torch

from specviz.cli.main import main
from specviz.drafters import drafter_names
from specviz.llm import load as llm
from tests.llm_models import checkpoint, corpus_slice, folder, tokenizer


def run(capsys, *argv) -> tuple[int, str, str]:
    capsys.readouterr()  # what building the test models printed
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(capsys, *argv) -> str:
    code, _, err = run(capsys, *argv)
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize("kind", ["llama", "gpt2"])
def test_generate_on_a_local_folder(capsys, kind):
    code, out, err = run(capsys, "generate", "--model", str(folder(kind)), "--drafter", "prompt-lookup",
                         "--temperature", "0", "--max-new-tokens", "12", "--dtype", "float64", "--prompt", "ROMEO:")  # fmt: skip
    assert code == 0, err
    assert out.startswith("ROMEO:") and "12 tokens" in err
    code, out, err = run(capsys, "generate", "--model", str(folder(kind)), "--drafter", "suffix", "--json",
                         "--max-new-tokens", "8", "--prompt", "ROMEO:")  # fmt: skip
    data = json.loads(out)
    assert code == 0 and data["tokens"] == 8 and len(data["vocab"]) == 96


def test_folder_without_a_model(capsys, tmp_path):
    (tmp_path / "notes.txt").write_text("no model here")
    assert "no transformers model" in one_line_error(capsys, "generate", "--model", str(tmp_path))


def test_unsupported_architecture(capsys, tmp_path):
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    cfg = GPTNeoXConfig(vocab_size=96, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64)
    GPTNeoXForCausalLM(cfg).save_pretrained(tmp_path)
    err = one_line_error(capsys, "generate", "--model", str(tmp_path))
    assert "'gpt_neox' is not supported" in err and "llama" in err


def test_draft_model_with_another_tokenizer(capsys, tmp_path):
    shutil.copytree(folder("gpt2"), tmp_path / "draft")
    tokenizer(80).save_pretrained(tmp_path / "draft")  # another vocabulary, same model files
    err = one_line_error(capsys, "generate", "--model", str(folder("llama")), "--drafter", "neural",
                         "--draft-model", str(tmp_path / "draft"))  # fmt: skip
    assert "another tokenizer" in err


def test_character_only_drafter_is_refused(capsys):
    for name in drafter_names(bpe=False):
        err = one_line_error(capsys, "generate", "--model", str(folder("llama")), "--drafter", name)
        assert "character model only" in err and "prompt-lookup" in err


def test_too_large_for_memory(capsys, monkeypatch):
    monkeypatch.setattr(llm, "available_memory", lambda: 1000)
    assert "too large for this machine" in one_line_error(capsys, "generate", "--model", str(folder("llama")))


def test_hub_name_not_in_the_cache(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    err = one_line_error(capsys, "generate", "--model", "nobody/no-such-model")
    assert "not in the local Hugging Face cache" in err


def test_truncated_gguf(capsys, tmp_path):
    from gguf import GGUFWriter

    path = tmp_path / "m.gguf"
    w = GGUFWriter(str(path), "llama")
    w.add_tensor("token_embd.weight", np.zeros((96, 64), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    assert "truncated" in one_line_error(capsys, "generate", "--model", str(path))


def test_exactness_on_a_local_folder_enumerates_every_token_with_pruning(capsys):
    code, out, err = run(capsys, "exactness", "--model", str(folder("llama")), "--drafter", "prompt-lookup", "--k", "2",
                         "--temperature", "1", "--samples", "60", "--dtype", "float64", "--json", "--min-mass", "1e-4",
                         "--prompt", "the cat sat on the mat. the cat sat on the mat. the cat ")  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert data["pruned"] and data["first_tokens"] == 3 and data["draft_positions"] == 2
    assert 0 < data["rest"] < 1 and data["verdict"] in ("exact", "unknown"), data["sentence"]
    assert any(r["tokens"] is None for r in data["top"]) or all(r["expected"] >= data["rest"] for r in data["top"])
    assert "enumerated with pruning" in data["sentence"]
    assert "--min-mass must be" in one_line_error(capsys, "exactness", "--model", str(folder("llama")),
                                                  "--min-mass", "1.5")  # fmt: skip


def test_float64_load_doubles_the_memory_figure():
    src32 = llm.inspect(str(folder("llama")), torch.float32)
    with pytest.raises(llm.LLMError, match="float64"):
        llm.inspect(str(folder("llama")), torch.float64, available=int(src32.parameters * 4 * llm.HEADROOM) + 1)


@pytest.mark.parametrize("kind", ["llama", "gpt2"])
def test_the_load_takes_the_config_the_checks_read(kind, monkeypatch):
    """load hands from_pretrained the config inspect read (not a second read of the files), in any dtype: the same
    model as a load that reads it again, and the Source's config left as it was for the next load."""
    from transformers import AutoConfig, PreTrainedConfig

    src = llm.inspect(str(folder(kind)), torch.float64)
    before = src.hf_config.to_dict()
    model = llm.load(src, torch.float64).model
    assert model.dtype == torch.float64 and src.hf_config.to_dict() == before
    reread = llm.load(dataclasses.replace(src, hf_config=None), torch.float64).model
    assert model.config.to_dict() == reread.config.to_dict()
    assert all(
        torch.equal(a, b) for a, b in zip(model.state_dict().values(), reread.state_dict().values(), strict=True)
    )
    for reader in (AutoConfig, PreTrainedConfig):
        monkeypatch.setattr(reader, "from_pretrained", lambda *a, **k: pytest.fail("the config was read again"))
    assert llm.load(src, torch.float32).model.dtype == torch.float32


def test_info_lists_smollm2_and_the_hub_cache(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))  # an empty cache: SmolLM2 alone
    code, out, _ = run(capsys, "info", "--json")
    real = [r for r in json.loads(out) if r.get("kind") == "real model"]
    assert code == 0 and [r["name"] for r in real] == ["smollm2"]
    assert real[0]["parameters"] == 134_515_008 and real[0]["config"]["vocab_size"] == 49152
    code, out, _ = run(capsys, "info")
    assert code == 0 and "--model smollm2" in out


def test_pieces_show_their_whitespace():
    from models.tokenizer import marked

    tok = checkpoint("llama").tokenizer
    ids = tok.encode(corpus_slice(300))
    assert "".join(tok.pieces[i] for i in ids) == corpus_slice(300) == tok.decode(ids)
    assert marked(" the\n") == "\u00b7the\u21b5\n" and marked("a\tb") == "a\u2192b"
    assert any(" " in tok.pieces[i] for i in ids) and all(" " not in marked(tok.pieces[i]) for i in ids)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is here: --device cuda is accepted")
def test_device_cuda_without_a_gpu(capsys):
    assert "sees no GPU" in one_line_error(capsys, "generate", "--model", str(folder("llama")), "--device", "cuda")


def test_the_help_says_how_to_read_characters_on_a_real_model(capsys):
    code, out, _ = run(capsys, "generate", "--help")
    text = " ".join(out.split())
    assert code == 0 and "Characters to generate" in text
    assert "with one, read 'tokens' wherever this help says 'characters'" in text
