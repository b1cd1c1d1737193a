"""SmolLM2-135M-Instruct built into a repository by a decoder recipe (`onnxport build --recipes DIR`): the fp32
decoder checked, int8-weights made and judged by what it generates, the generation metrics in the manifest and
in `onnxport info`, int8-weights served. The demo recipe (models-decoders/smollm2.py) judges 8 prompts x 24
tokens and both weight variants; this one 3 prompts x 12 tokens and int8-weights alone, to keep it short. The
export's check runs the first prompt and 8 cached steps against transformers (a logit off by more than the
tolerance, or another argmax, fails the build); greedy generation equal to transformers' is the tiny decoder's
test (tests/convert/decoder/test_decoder_export.py).

Slow: the export and its check take most of it (175 s on 2 cores shared with other tests); the figures are printed
(`pytest -s`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from fixtures.tiny_decoder import smollm2_gguf
from onnxport import cli

RECIPE = """
from pathlib import Path

from onnxport.recipe import DecoderRecipe


def held_out():
    from sklearn.datasets import load_iris

    return load_iris().DESCR[:1200]


RECIPE = DecoderRecipe(
    name="smollm2",
    description="SmolLM2-135M-Instruct, judged briefly",
    gguf=Path({gguf!r}),
    prompts=("What is the capital of France?", "Write a haiku about the sea.", "What is 12 times 7?"),
    held_out=held_out,
    new_tokens=12,
    variants=("int8-weights",),
    check_steps=8,
)
"""


@pytest.mark.slow
def test_smollm2_builds_into_the_repository_with_int8_weights_served(tmp_path: Path, capsys):
    recipes = tmp_path / "recipes"
    recipes.mkdir()
    (recipes / "smollm2.py").write_text(RECIPE.format(gguf=str(smollm2_gguf())))
    repository = tmp_path / "repository"
    started = time.perf_counter()
    assert cli.main(["--repository", str(repository), "build", "--recipes", str(recipes)]) == 0
    seconds = time.perf_counter() - started
    built = capsys.readouterr().out

    entry = json.loads((repository / "manifest.json").read_text())["decoders"]["smollm2"]
    assert entry["task"] == "generation" and entry["check"]["max_abs"] <= entry["check"]["tolerance"]
    assert entry["check"]["steps"] == 9  # the prompt, then 8 steps through the cache
    int8 = entry["variants"]["int8-weights"]
    assert int8["status"] == "ok", int8["reason"]
    assert 0.2 < int8["size_ratio"] < 0.3
    measured = int8["generation"]
    assert (measured["prompts"], measured["new_tokens"]) == (3, 12) and measured["text_tokens"] > 400
    assert measured["top1_agreement"] >= entry["budget"]["top1_min"]
    assert measured["nll_change"] <= entry["budget"]["nll_change_max"]
    assert entry["default_variant"] == "int8-weights"
    assert {a["name"] for a in entry["assets"].values()} == {"tokenizer.json", "generation.json", "chat_template.jinja"}
    for record in [*entry["variants"].values(), *entry["assets"].values()]:
        assert (repository / record["file"]).is_file()
    tokenizer = next(a for a in entry["assets"].values() if a["name"] == "tokenizer.json")
    special = Tokenizer.from_file(str(repository / tokenizer["file"])).encode("<|im_start|>system").ids
    assert len(special) == 2  # the chat's special tokens stay single tokens

    assert cli.main(["--repository", str(repository), "info", "smollm2"]) == 0
    info = capsys.readouterr().out
    row = next(line for line in info.splitlines() if line.startswith("int8-weights"))
    assert f"{int8['size_ratio']:.3f}x" in row and f"{measured['top1_agreement']:.4f}" in row
    assert f"{measured['nll_change']:+.4f}" in row and "served (default)" in row

    # A second build of the same recipe and GGUF does nothing.
    assert cli.main(["--repository", str(repository), "build", "--recipes", str(recipes)]) == 0
    assert "up to date" in capsys.readouterr().out
    print(f"\n{built}\nbuilt in {seconds:.0f} s\n{info}")
