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

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
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


pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Built:
    recipes: Path
    repository: Path
    seconds: float
    printed: str


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Built:
    tmp_path = tmp_path_factory.mktemp("smollm2")
    recipes = tmp_path / "recipes"
    recipes.mkdir()
    (recipes / "smollm2.py").write_text(RECIPE.format(gguf=str(smollm2_gguf())))
    repository = tmp_path / "repository"
    started = time.perf_counter()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert cli.main(["--repository", str(repository), "build", "--recipes", str(recipes)]) == 0
    return Built(recipes, repository, time.perf_counter() - started, printed.getvalue())


def test_smollm2_builds_into_the_repository_with_int8_weights_served(built: Built, capsys):
    recipes, repository, seconds, printed = built.recipes, built.repository, built.seconds, built.printed
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
    assert {a["name"] for a in entry["assets"].values()} == {
        "tokenizer.json",
        "generation.json",
        "chat_template.jinja",
        "golden.json",
    }
    assert len(measured["first_divergences"]) == 3  # each prompt's, which check holds the server to
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
    print(f"\n{printed}\nbuilt in {seconds:.0f} s\n{info}")


def _check(repository: Path, report: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "onnxport", "--repository", str(repository), "check", "--runtimes", "server"]
    return subprocess.run([*command, "--json", str(report)], capture_output=True, text=True, timeout=600)


def test_check_holds_the_server_to_the_tokens_the_build_judged(built: Built, tmp_path: Path):
    entry = json.loads((built.repository / "manifest.json").read_text())["decoders"]["smollm2"]
    golden = next(a for a in entry["assets"].values() if a["name"] == "golden.json")
    reference = json.loads((built.repository / golden["file"]).read_text())
    assert reference["chat"] and [p["prompt"] for p in reference["prompts"]] == entry["judged_on"]["prompts"]
    assert all(len(p["tokens"]) == len(p["texts"]) == len(p["best_two"]) <= 12 for p in reference["prompts"])

    started = time.perf_counter()
    done = _check(built.repository, tmp_path / "report.json")
    seconds = time.perf_counter() - started
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    rows = {r["variant"]: r for r in report["results"] if r["model"] == "smollm2"}
    assert set(rows) == {"fp32", "int8-weights"} and not report["browsers"]  # `server` alone: no browser
    assert all(r["runtime"] == "server" and r["status"] == "pass" for r in rows.values()), rows
    assert rows["fp32"]["metric"] == {"greedy_equal": 3, "prompts": 3, "first_divergences": [None] * 3}
    measured = entry["variants"]["int8-weights"]["generation"]
    assert rows["int8-weights"]["metric"]["first_divergences"] == measured["first_divergences"]
    assert "smollm2 fp32 server: pass" in done.stderr and "greedy 3/3" in done.stdout
    print(f"\ncheck --runtimes server: {seconds:.1f} s\n{done.stdout}")


def test_a_server_that_generates_other_tokens_than_judged_fails_naming_the_prompt_and_step(built: Built, tmp_path):
    """The same files, a manifest that says int8-weights generates fp32's text for every prompt, and one that
    says fp32 leaves its own text at step 0: the server's tokens are not what the manifest judged."""
    repository = tmp_path / "repository"
    shutil.copytree(built.repository, repository, copy_function=os.link)
    manifest = json.loads((repository / "manifest.json").read_text())
    int8 = manifest["decoders"]["smollm2"]["variants"]["int8-weights"]["generation"]
    judged = list(int8["first_divergences"])
    int8["first_divergences"] = [None if d is not None else 0 for d in judged]
    (repository / "manifest.json").unlink()  # a hard link to the built one
    (repository / "manifest.json").write_text(json.dumps(manifest))

    done = _check(repository, tmp_path / "report.json")
    assert done.returncode == 1, done.stdout + done.stderr
    results = json.loads((tmp_path / "report.json").read_text())["results"]
    row = next(r for r in results if r["variant"] == "int8-weights")
    assert row["status"] == "fail" and row["reason"].startswith("3 of 3 prompts differ from the build's judgement")
    first = judged[0]
    expected = (
        "the build judged it leaving fp32's at step 0, the server generated fp32's text"
        if first is None
        else f"the build judged it equal to fp32's, the server left at step {first}: "
    )
    assert "prompt 1 ('What is the capital of France?'): " + expected in row["reason"], row["reason"]
    assert "[server] smollm2 int8-weights server: fail: 3 of 3" in done.stderr
