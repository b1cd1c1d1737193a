"""Decoder recipes into the repository (convert/decoder_build.py): the generation budget's judgement, the recipe's
errors, and the tiny decoder's variants made, judged, committed under the manifest's `decoders` (held to its
JSON Schema) and shown by `onnxport info`. The real SmolLM2 build: test_smollm2_repository.py."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import jsonschema
import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from fixtures.tiny_decoder import TINY_PROMPTS, tiny_decoder_recipe, tiny_decoder_repository
from onnxport import cli
from onnxport.accuracy import budgets
from onnxport.accuracy.measured import GenerationMeasurement
from onnxport.convert import decoder_build
from onnxport.convert.decoder_build import decoder_key
from onnxport.errors import RecipeError
from onnxport.recipe import DecoderRecipe, load_any_recipe, load_recipe
from onnxport.repository import decoder_record
from onnxport.repository.schema import manifest_schema
from onnxport.repository.store import Repository

PROJECT_ROOT = Path(__file__).resolve().parents[3]
LAX = budgets.GenerationBudget(top1_min=0.0, nll_change_max=1e9, why="everything passes")
STRICT = budgets.GenerationBudget(top1_min=1.01, nll_change_max=1e9, why="nothing passes")


def metrics(top1: float, nll_change: float) -> GenerationMeasurement:
    return {
        "prompts": 8,
        "new_tokens": 24,
        "greedy_equal_share": 0.5,
        "mean_first_divergence": 7.0,
        "text_tokens": 256,
        "top1_agreement": top1,
        "nll_reference": 2.0,
        "nll_candidate": 2.0 + nll_change,
        "nll_change": nll_change,
    }


def test_within_the_generation_budget_is_served():
    assert budgets.generation_shortfall(metrics(0.93, 0.013)) is None
    assert budgets.generation_shortfall(metrics(0.90, 0.10)) is None  # the bounds themselves pass


def test_top1_below_the_bound_is_the_reason_with_both_figures():
    assert budgets.generation_shortfall(metrics(0.51, 0.9)) == "top-1 agreement with fp32 0.5100 < budget 0.9"


def test_a_likelihood_drop_above_the_bound_is_the_reason():
    reason = budgets.generation_shortfall(metrics(0.95, 0.21))
    assert reason == "NLL change against fp32 +0.2100 nats/token > budget 0.1"


def test_nan_fails_either_bound():
    assert budgets.generation_shortfall(metrics(math.nan, 0.0)) is not None
    assert budgets.generation_shortfall(metrics(0.95, math.nan)) is not None


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"prompts": ()}, "prompts must be a non-empty tuple"),
        ({"new_tokens": 0}, "new_tokens must be an integer >= 1, got 0"),
        ({"variants": ("fp16",)}, "variants ['fp16'] are not among int8-weights, int4"),
    ],
    ids=["no-prompts", "no-tokens", "unknown-variant"],
)
def test_a_bad_decoder_recipe_is_one_line_naming_it(change, words):
    fields = {"name": "tiny", "description": "d", "gguf": Path("x.gguf"), "prompts": TINY_PROMPTS, "held_out": str}
    with pytest.raises(RecipeError, match="decoder recipe 'tiny'") as raised:
        DecoderRecipe(**{**fields, **change})
    assert words in str(raised.value) and "\n" not in str(raised.value)


def test_a_missing_gguf_is_one_line_naming_the_file(tmp_path, capsys):
    missing = tmp_path / "nowhere" / "model.gguf"
    recipes = tmp_path / "recipes"
    tiny_decoder_recipe(recipes, str(missing))
    code = cli.main(["--repository", str(tmp_path / "repo"), "build", "--recipes", str(recipes), "--quiet"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1 and f"GGUF file {missing}: expected a file, found nothing" in err
    assert not (tmp_path / "repo" / "manifest.json").exists()


def test_a_decoder_recipe_is_not_a_model_recipe(tmp_path):
    path = tiny_decoder_recipe(tmp_path)
    assert isinstance(load_any_recipe("tiny", path), DecoderRecipe)
    with pytest.raises(RecipeError, match="is a decoder recipe"):
        load_recipe("tiny", path)


@pytest.fixture(scope="module")
def lax(tmp_path_factory, tiny_decoder) -> Repository:
    return tiny_decoder_repository(tmp_path_factory.mktemp("lax"), tiny_decoder, LAX)


def test_each_variant_is_made_measured_and_stored_with_the_tokenizer_files(lax):
    entry = lax.read_manifest()["decoders"]["tiny"]
    assert entry["task"] == "generation" and sorted(entry["variants"]) == ["fp32", "int4", "int8-weights"]
    for name, variant in entry["variants"].items():
        assert decoder_record.outcome(variant) == "served", (name, variant)
        assert decoder_record.made(variant) and lax.path_of(variant["file"]).is_file()
        if name != "fp32":
            measured = variant["generation"]
            assert measured["prompts"] == 2 and measured["new_tokens"] == 4
            assert 0 <= measured["top1_agreement"] <= 1 and 0 <= measured["greedy_equal_share"] <= 1
            assert variant["size_ratio"] < 0.6
    assert sorted(a["name"] for a in entry["assets"].values()) == [
        "chat_template.jinja",
        "generation.json",
        "golden.json",
        "tokenizer.json",
    ]
    assert entry["default_variant"] == min(entry["variants"], key=lambda n: entry["variants"][n]["bytes"])
    assert entry["judged_on"]["chat"] and entry["judged_on"]["prompts"] == list(TINY_PROMPTS)


def test_the_manifest_with_a_decoder_is_held_to_its_schema(lax):
    manifest = json.loads(lax.manifest_path.read_text())
    jsonschema.Draft202012Validator(manifest_schema()).validate(manifest)
    bad = json.loads(lax.manifest_path.read_text())
    bad["decoders"]["tiny"]["variants"]["int4"]["generation"]["surprise"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(manifest_schema()).validate(bad)


def test_info_prints_each_variants_generation_metrics(lax, capsys):
    assert cli.main(["--repository", str(lax.root), "info", "tiny"]) == 0
    out = capsys.readouterr().out
    assert "task generation" in out and "top-1 agreement >= 0" in out
    entry = lax.read_manifest()["decoders"]["tiny"]
    int8 = entry["variants"]["int8-weights"]
    assert decoder_record.made(int8)
    row = next(line for line in out.splitlines() if line.startswith("int8-weights"))
    assert f"{int8['size_ratio']:.3f}x" in row and f"{int8['generation']['top1_agreement']:.4f}" in row
    assert f"{int8['generation']['nll_change']:+.4f}" in row and "served" in row
    assert cli.main(["--repository", str(lax.root), "list"]) == 0
    assert "generation" in capsys.readouterr().out


def test_outside_the_budget_a_variant_is_kept_over_budget_with_its_reason(tmp_path, tiny_decoder):
    entry = tiny_decoder_repository(tmp_path, tiny_decoder, STRICT).read_manifest()["decoders"]["tiny"]
    for name in ("int8-weights", "int4"):
        variant = entry["variants"][name]
        assert decoder_record.outcome(variant) == "over_budget"
        assert variant["reason"].startswith("top-1 agreement with fp32 ") and "< budget 1.01" in variant["reason"]
    assert entry["default_variant"] == "fp32"  # fp32 is always served


def test_info_of_an_unknown_name_lists_the_decoders_too(lax, capsys):
    assert cli.main(["--repository", str(lax.root), "info", "nope"]) == 2
    assert "unknown model 'nope'; the repository has: tiny" in capsys.readouterr().err


def test_remove_takes_a_decoder_out_with_its_files(tmp_path, tiny_decoder, capsys):
    repository = tiny_decoder_repository(tmp_path, tiny_decoder, LAX)
    assert any(repository.artifacts.iterdir())
    assert cli.main(["--repository", str(repository.root), "remove", "tiny"]) == 0
    assert repository.read_manifest()["decoders"] == {} and not any(repository.artifacts.iterdir())
    assert cli.main(["--repository", str(repository.root), "remove", "tiny"]) == 2
    assert "no model 'tiny'" in capsys.readouterr().err


def test_fewer_variants_is_another_build(tmp_path):
    recipe = load_any_recipe("tiny", tiny_decoder_recipe(tmp_path))
    assert isinstance(recipe, DecoderRecipe)
    narrowed = dataclasses.replace(recipe, variants=("int8-weights",))
    assert decoder_key(recipe, "0" * 64, "text") != decoder_key(narrowed, "0" * 64, "text")
    assert decoder_key(recipe, "0" * 64, "text") == decoder_key(recipe, "0" * 64, "text")


def test_a_variant_whose_logits_are_not_finite_is_failed_not_measured(tmp_path, tiny_decoder, monkeypatch):
    def nan_weights(model: onnx.ModelProto):
        broken = onnx.ModelProto()
        broken.CopyFrom(model)
        for tensor in broken.graph.initializer:
            weights = numpy_helper.to_array(tensor)
            if weights.ndim == 2 and weights.dtype == np.float32:
                tensor.CopyFrom(numpy_helper.from_array(np.full_like(weights, np.nan), tensor.name))
        return broken, {}

    monkeypatch.setitem(decoder_build.MAKERS, "int8-weights", nan_weights)
    entry = tiny_decoder_repository(tmp_path, tiny_decoder, LAX).read_manifest()["decoders"]["tiny"]
    variant = entry["variants"]["int8-weights"]
    assert decoder_record.outcome(variant) == "failed" and variant["reason"].startswith("int8-weights: not finite")
    json.loads(json.dumps(entry, allow_nan=False))  # what the manifest holds is JSON
