"""The manifest as a typed contract: the JSON Schema generated from repository/manifest.py accepts
what builds and imports write, refuses what they never write, and the server publishes it; the
recipes' `playground` and `bench_inputs` reach the manifest and the build key."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import jsonschema
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxport import cli
from onnxport.accuracy import measured, reasons
from onnxport.accuracy.tolerance import Tolerance
from onnxport.bench.inputs import batch_one
from onnxport.convert.intake.sources import recipe_build_key
from onnxport.errors import RecipeError
from onnxport.recipe import Recipe, load_recipe
from onnxport.repository import manifest as types
from onnxport.repository import store, variant_table
from onnxport.repository.schema import SCHEMA_ID, manifest_schema
from onnxport.serving.app import create_app

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _import(repository: Path, model: onnx.ModelProto, name: str, work: Path) -> dict:
    """`onnxport import` of a model file, in-process; returns the repository's manifest."""
    path = work / f"{name}.onnx"
    onnx.save(model, path)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(work)  # onnxruntime's shape inference writes temporary files into the working folder
        code = cli.main(["--repository", str(repository), "import", str(path), "--name", name, "--quiet"])
    assert code == 0, f"importing {name} failed; see the captured stderr"
    return json.loads((repository / "manifest.json").read_text())


def _dynamic_matmul() -> onnx.ModelProto:
    """y = x @ W with an unnamed dynamic first dimension (the manifest writes it as -1)."""
    weight = numpy_helper.from_array(np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32), "W")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"], name="matmul")],
        "matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 4])],
        [weight],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> tuple[Path, dict]:
    """(repository, manifest) with one imported .onnx file (seeded golden inputs)."""
    work = tmp_path_factory.mktemp("imported")
    repository = work / "repository"
    return repository, _import(repository, _dynamic_matmul(), "matmul", work)


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = manifest_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def problems(validator, manifest: dict) -> list[str]:
    """'path: message' of every error, and of every branch's error under an anyOf."""
    found = []

    def add(error: jsonschema.ValidationError) -> None:
        message = error.message if len(error.message) < 200 else f"{error.message[:80]} ... {error.message[-120:]}"
        found.append(f"{'/'.join(map(str, error.absolute_path)) or '(top)'}: {message}")
        for branch in error.context or ():
            add(branch)

    for error in validator.iter_errors(manifest):
        add(error)
    return found


# --------------------------------------------------------------------------- the schema itself


def test_the_schema_names_itself_and_the_manifest_version():
    schema = manifest_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == SCHEMA_ID and str(store.SCHEMA_VERSION) in schema["$id"]
    assert schema["title"] == f"{store.SCHEMA} version {store.SCHEMA_VERSION}"
    assert schema["properties"]["schema"]["const"] == store.SCHEMA
    assert schema["properties"]["schema_version"]["const"] == store.SCHEMA_VERSION
    assert manifest_schema() == schema and manifest_schema() is not schema  # a fresh copy each time


def test_every_record_is_closed_and_the_enumerations_come_from_their_tables():
    definitions = manifest_schema()["$defs"]
    for name, definition in definitions.items():
        if definition.get("type") == "object" and "properties" in definition:
            assert definition.get("additionalProperties") is False, f"{name} accepts unknown keys"
    assert list(definitions["Variants"]["properties"]) == list(variant_table.NAMES)
    assert definitions["Variants"]["required"] == list(variant_table.NAMES)
    precisions = {v.precision for v in variant_table.VARIANTS}
    assert set(definitions["SkippedVariant"]["properties"]["precision"]["enum"]) == precisions
    entry = definitions["ModelEntry"]["properties"]
    assert entry["playground"]["enum"] == list(types.PLAYGROUNDS)
    assert entry["task"]["enum"] == list(types.TASKS)


def test_the_budget_type_is_the_tolerance_type():
    assert list(measured.Budget.__annotations__) == [f.name for f in dataclasses.fields(Tolerance)]
    assert set(manifest_schema()["$defs"]["Budget"]["required"]) == set(Tolerance().as_json())


# --------------------------------------------------------------------------- real manifests


@pytest.mark.slow
def test_the_demo_build_is_valid(validator, demo_manifest):
    assert problems(validator, demo_manifest) == []
    # Every variant form the demos have is covered by the same schema.
    assert {r["status"] for e in demo_manifest["models"].values() for r in e["variants"].values()} >= {"ok"}


def test_an_imported_model_is_valid(validator, imported):
    _, manifest = imported
    assert problems(validator, manifest) == []
    entry = manifest["models"]["matmul"]
    assert entry["kind"] == "onnx" and entry["playground"] == "generic" and entry["bench_inputs"] is None
    assert entry["inputs"] == [{"name": "x", "dtype": "float32", "shape": [-1, 8]}]


def test_the_other_variant_forms_and_a_missing_shape_are_valid(validator, imported):
    manifest = copy.deepcopy(imported[1])
    entry = manifest["models"]["matmul"]
    entry["inputs"][0]["shape"] = None  # a graph that declares no shape
    entry["variants"]["fp16"] = {"precision": "fp16", "status": "skipped", "reason": "nothing to convert"}
    entry["variants"]["int8-dynamic"] = {"precision": "int8", "status": "rejected", "reason": "conversion failed: X"}
    over = entry["variants"]["int8-static"]
    over.update(status="rejected", reason="max error / max |fp32| 0.3 > budget 0.1")
    assert problems(validator, manifest) == []


def test_an_over_budget_variant_keeps_its_reason_as_data_and_an_unknown_code_is_refused(validator, imported):
    manifest = copy.deepcopy(imported[1])
    over = manifest["models"]["matmul"]["variants"]["fp32"]  # a measured record, made over budget
    del over["forms"]
    data = {"code": "max_error_above_bound", "value": 0.3, "bound": 0.1, "against": "fp32", "limit": "budget"}
    over.update(status="rejected", reason=reasons.render(data), reason_data=data)
    assert over["reason"] == "max error / max |fp32| 0.3 > budget 0.1"
    assert problems(validator, manifest) == []
    over["reason_data"] = {**data, "code": "too_slow"}
    assert problems(validator, manifest) != []


@pytest.mark.parametrize(
    "where, value, expected",
    [
        (("variants", "fp32", "bytes"), "many", "'many' is not of type 'integer'"),
        (("variants", "fp32", "status"), "pending", "is not valid under any of the given schemas"),
        (("variants", "fp32", "reason"), "served with a reason", "is not valid under any of the given schemas"),
        (("inputs", 0, "shape"), "batch x 8", "is not valid under any of the given schemas"),
        (("playground",), "spreadsheet", "'spreadsheet' is not one of"),
        (("golden", "path"), "/etc/passwd", "does not match"),
        (("speed_of_light",), 1.0, "Additional properties are not allowed"),
        (("variants", "fp32", "speed", "turbo"), True, "Additional properties are not allowed"),
    ],
)
def test_what_a_build_never_writes_is_refused(validator, imported, where, value, expected):
    manifest = copy.deepcopy(imported[1])
    target = manifest["models"]["matmul"]
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    found = problems(validator, manifest)
    assert found and any(expected in p for p in found), found


def test_a_missing_variant_or_an_unknown_one_is_refused(validator, imported):
    manifest = copy.deepcopy(imported[1])
    variants = manifest["models"]["matmul"]["variants"]
    variants["int2"] = variants.pop("int8-static")
    found = problems(validator, manifest)
    assert any("'int8-static' is a required property" in p for p in found), found
    assert any("'int2' was unexpected" in p for p in found), found


def test_another_schema_version_is_refused(validator, imported):
    manifest = {**imported[1], "schema_version": store.SCHEMA_VERSION + 1}
    assert any("schema_version" in p for p in problems(validator, manifest))


# --------------------------------------------------------------------------- the route


def test_the_server_publishes_the_schema(imported):
    app = create_app({"repository": imported[0]})
    client = app.test_client()
    response = client.get("/api/manifest.schema.json", buffered=True)
    assert response.status_code == 200
    assert response.mimetype == "application/schema+json" and response.is_json
    assert response.headers["Cache-Control"] == "no-cache" and response.headers.get("ETag")
    assert json.loads(response.data) == manifest_schema()
    again = client.get("/api/manifest.schema.json", headers={"If-None-Match": response.headers["ETag"]}, buffered=True)
    assert again.status_code == 304


# --------------------------------------------------------------------------- what recipes declare


@pytest.mark.slow
def test_the_demo_recipes_declare_their_playground_and_bench_inputs(demo_manifest, golden_inputs):
    models = demo_manifest["models"]
    assert {name: e["playground"] for name, e in models.items()} == {
        "iris": "tabular",
        "digits": "image-8x8",
        "minilm": "sentence-pair",
    }
    assert models["iris"]["bench_inputs"] is None and models["digits"]["bench_inputs"] is None
    minilm = batch_one(models["minilm"], golden_inputs("minilm"))
    assert {k: (v.dtype.name, v.shape) for k, v in minilm.items()} == {
        "input_ids": ("int64", (1, 128)),
        "attention_mask": ("int64", (1, 128)),
    }
    assert minilm["input_ids"][0, 0] == 101 and minilm["input_ids"][0, -1] == 102 and minilm["attention_mask"].all()
    recipe = load_recipe("minilm", PROJECT_ROOT / "models" / "minilm.py")
    for name, value in recipe.bench_inputs().items():
        np.testing.assert_array_equal(minilm[name], value)
    iris = batch_one(models["iris"], golden_inputs("iris"))
    np.testing.assert_array_equal(iris["features"], golden_inputs("iris")["features"][:1])


def test_the_build_key_follows_the_declarations(recipes_dir):
    recipe = load_recipe("tiny", recipes_dir / "tiny.py")
    key = recipe_build_key(recipe, 17)
    assert recipe_build_key(recipe, 17) == key
    assert recipe_build_key(dataclasses.replace(recipe, playground="tabular"), 17) != key
    feeds = {"features": np.zeros((1, 4), np.float32)}
    with_inputs = dataclasses.replace(recipe, bench_inputs=lambda: feeds)
    assert recipe_build_key(with_inputs, 17) != key
    other = dataclasses.replace(recipe, bench_inputs=lambda: {"features": np.ones((1, 4), np.float32)})
    assert recipe_build_key(other, 17) != recipe_build_key(with_inputs, 17)


def test_a_bad_declaration_is_the_recipes_error(recipes_dir):
    recipe = load_recipe("tiny", recipes_dir / "tiny.py")
    with pytest.raises(RecipeError, match="playground 'spreadsheet' is not one of tabular"):
        dataclasses.replace(recipe, playground="spreadsheet")
    with pytest.raises(RecipeError, match=r"'tiny': bench_inputs\(\) failed: ZeroDivisionError"):
        recipe_build_key(dataclasses.replace(recipe, bench_inputs=lambda: 1 / 0), 17)
    with pytest.raises(RecipeError, match="must return {input name: numpy array}, got list"):
        recipe_build_key(dataclasses.replace(recipe, bench_inputs=lambda: [1, 2]), 17)
    assert isinstance(recipe, Recipe)


BENCH_INPUTS = """
import dataclasses as _dataclasses

RECIPE = _dataclasses.replace(RECIPE, playground="tabular",
                              bench_inputs=lambda: {NAME: np.full((1, 4), 5.0, np.float32)})
"""


def test_bench_inputs_are_built_into_the_manifest_and_checked_against_the_model(
    recipes_dir, tmp_path, run_cli, validator
):
    tiny = recipes_dir / "tiny.py"
    source = tiny.read_text()
    tiny.write_text(source + BENCH_INPUTS.replace("NAME", repr("features")))
    code, _, err = run_cli("--repository", tmp_path / "good", "build", "--recipes", recipes_dir, "--quiet")
    assert code == 0, err
    manifest = json.loads((tmp_path / "good" / "manifest.json").read_text())
    assert problems(validator, manifest) == []
    entry = manifest["models"]["tiny"]
    assert entry["playground"] == "tabular"
    assert entry["bench_inputs"]["features"]["shape"] == [1, 4]
    np.testing.assert_array_equal(batch_one(entry, {})["features"], np.full((1, 4), 5.0, np.float32))

    tiny.write_text(source + BENCH_INPUTS.replace("NAME", repr("pixels")))
    code, _, err = run_cli("--repository", tmp_path / "bad", "build", "--recipes", recipes_dir, "--quiet")
    assert code == 1
    assert "onnxport: error: tiny: bench inputs ['pixels'] are not the model's inputs ['features']" in err
