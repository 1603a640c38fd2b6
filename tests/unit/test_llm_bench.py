"""The bench's real-model suite (specviz/bench/llm.py) on the tiny random Llama, with the tiny GPT-2 (same
tokenizer) as the draft model: rows per prompt and over the set, for us and for transformers' generate, prompt
lookup and assisted generation; greedy outputs equal in float64; the rows in the bench's file format; the CLI."""

import pytest

from specviz.bench.llm import drafters_for, peer_kwargs, run_llm_bench, verify_costs
from specviz.bench.rows import rows_from_jsonl, rows_to_jsonl
from specviz.cli.main import main
from specviz.drafters import BASELINE, drafter_class
from tests.llm_models import checkpoint, folder

PROMPTS = {"repeat": "the cat sat on the mat. the cat sat on the mat. the cat sat on the mat. the cat ",
           "verse": "ROMEO:\nBut soft, what light through yonder window breaks?"}  # fmt: skip


def test_the_suite_compares_us_with_transformers_on_each_prompt():
    ck, draft = checkpoint("llama"), checkpoint("gpt2").model  # float64: greedy outputs must be equal
    drafters = drafters_for(draft)
    assert drafters[0] == BASELINE and all(drafter_class(d).bpe for d in drafters)
    assert "neural" in drafters and "neural" not in drafters_for(None)
    peers = [d for d in drafters if peer_kwargs(d, 3, draft) is not None]
    assert "prompt-lookup" in peers and peer_kwargs("neural", 3, draft)["assistant_model"] is draft
    assert peer_kwargs("neural-tree", 3, draft) is None  # transformers has no tree drafting
    rows, extras = run_llm_bench(ck, PROMPTS, ["prompt-lookup", "suffix", "neural"], k=3, max_new_tokens=12,
                                 repeats=2, draft_model=draft)  # fmt: skip
    assert {r["suite"] for r in rows} == {"llm"}
    for scope in [*PROMPTS, None]:
        mine = {(r["impl"], r["drafter"]) for r in rows if r["prompt"] == scope}
        assert mine == {("specviz", d) for d in ("none", "prompt-lookup", "suffix", "neural")} | {
            ("transformers", d) for d in ("none", "prompt-lookup", "neural")
        }
    for r in rows:
        assert r["same_as_baseline"] is True, r  # float64: every method's greedy tokens are plain decoding's
        assert r["tokens"] == 12 * r["prompts"] and r["tokens_per_s"] > 0 and r["speedup"] > 0
    plain = next(r for r in rows if r["prompt"] is None and r["impl"] == "specviz" and r["drafter"] == BASELINE)
    assert plain["tokens_per_forward"] == 1.0 and plain["speedup"] == 1.0
    lookup = next(
        r for r in rows if r["prompt"] == "repeat" and r["impl"] == "specviz" and r["drafter"] == "prompt-lookup"
    )
    assert lookup["acceptance_rate"] is not None, "prompt lookup drafted nothing on the repetitive prompt"
    assert extras["departures"] == {"repeat": None, "verse": None}
    assert rows_from_jsonl(rows_to_jsonl(rows)) == rows


def test_verify_costs_time_every_size_for_any_target():
    ck = checkpoint("llama")
    costs = verify_costs(ck.target_model(), ck.config.vocab_size, context_len=16, repeats=2, sizes=(1, 2, 5))
    assert list(costs) == [1, 2, 5] and all(c["ms"] > 0 and c["v"] > 0 for c in costs.values())


def test_bench_cli_on_a_local_folder(capsys):
    capsys.readouterr()
    code = main(["bench", "--model", str(folder("llama")), "--drafters", "prompt-lookup", "--max-new-tokens", "6",
                 "--repeats", "1", "--json"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    rows = rows_from_jsonl(out)
    assert {(r["impl"], r["drafter"]) for r in rows} >= {("specviz", "prompt-lookup"), ("transformers", "none")}
    assert "v(N), this model" in err and "v(N), character model" in err


@pytest.mark.parametrize("argv, message", [
    (["--model", "target"], "takes a real model"),
    (["--model", "FOLDER", "--drafters", "trie"], "character model only"),
    (["--model", "FOLDER", "--drafters", "neural"], "needs --draft-model"),
])  # fmt: skip
def test_bench_cli_bad_input_is_one_line(capsys, argv, message):
    argv = [str(folder("llama")) if a == "FOLDER" else a for a in argv]
    capsys.readouterr()
    code = main(["bench", *argv])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1 and message in err, err
