"""Per-variant reference data (server/onnxport/convert/reference.py): golden rows and each variant's own
native onnxruntime outputs, published as content-addressed JSON for verification in the browser."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxport import runtime, tensor_json
from onnxport.accuracy import measure
from onnxport.convert.reference import REFERENCE_ROWS, reference_inputs
from onnxport.repository import testdata
from onnxport.repository.variant_table import NAMES as VARIANTS

DEMOS = ("digits", "iris", "minilm")


def manifest_of(repository: Path) -> dict:
    return json.loads((repository / "manifest.json").read_text())


def golden_inputs(repository: Path, entry: dict) -> dict[str, np.ndarray]:
    return testdata.read_golden(repository, entry)[0][0]


def read_reference(repository: Path, record: dict) -> dict:
    """The reference file of a variant record, after checking it against its manifest record."""
    reference = record["reference"]
    assert reference["file"] == f"artifacts/{reference['sha256']}.json"
    data = (repository / reference["file"]).read_bytes()
    assert hashlib.sha256(data).hexdigest() == reference["sha256"]
    assert len(data) == reference["bytes"]
    document = json.loads(data)
    assert json.dumps(document, sort_keys=True, separators=(",", ":")).encode() == data  # canonical bytes
    assert document["schema"] == "onnxport.reference" and document["schema_version"] == 1
    assert reference["golden_set"] == 0
    return document


def independent_run(repository: Path, record: dict, feeds: dict) -> dict[str, np.ndarray]:
    session = runtime.create_session(repository / record["file"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


def check_references(repository: Path, model: str, expected_rows: int | None) -> dict:
    """Every variant with a file has a reference matching the golden inputs and its own artifact.

    expected_rows None: the whole golden set 0 (rows field 1)."""
    entry = manifest_of(repository)["models"][model]
    golden = golden_inputs(repository, entry)
    documents = {}
    for variant, record in entry["variants"].items():
        if "file" not in record:
            assert "reference" not in record, variant
            continue
        document = read_reference(repository, record)
        assert (document["model"], document["variant"]) == (model, variant)
        inputs = tensor_json.decode(document["inputs"])
        assert sorted(inputs) == sorted(i["name"] for i in entry["inputs"])  # sort_keys orders names
        for name, value in inputs.items():
            want = golden[name] if expected_rows is None else golden[name][:expected_rows]
            assert value.dtype == want.dtype and value.shape == want.shape, (variant, name)
            np.testing.assert_array_equal(value, want)
        assert record["reference"]["rows"] == (1 if expected_rows is None else expected_rows)
        outputs = tensor_json.decode(document["outputs"])
        expected = independent_run(repository, record, inputs)
        assert sorted(outputs) == sorted(expected), variant
        for name, value in expected.items():
            assert outputs[name].dtype == value.dtype and outputs[name].shape == value.shape, (variant, name)
            if value.dtype.kind == "f":
                np.testing.assert_allclose(outputs[name], value, rtol=1e-6, atol=1e-6, err_msg=f"{variant} {name}")
            else:
                np.testing.assert_array_equal(outputs[name], value, err_msg=f"{variant} {name}")
        documents[variant] = document
    return documents


def build_tiny(run_cli, repository: Path, recipes_dir: Path, *args: str) -> None:
    code, _, err = run_cli("--repository", repository, "build", "--quiet", "--recipes", recipes_dir, *args, "tiny")
    assert code == 0, err


# ------------------------------------------------------------------------------- tiny recipe


def test_tiny_recipe_references_are_cut_to_two_rows(run_cli, tmp_path, recipes_dir):
    repository = tmp_path / "repository"
    build_tiny(run_cli, repository, recipes_dir)
    entry = manifest_of(repository)["models"]["tiny"]
    assert golden_inputs(repository, entry)["features"].shape[0] > REFERENCE_ROWS
    documents = check_references(repository, "tiny", REFERENCE_ROWS)
    assert set(documents) == {v for v, r in entry["variants"].items() if r["status"] in ("ok", "rejected")}
    assert documents  # fp32 at least
    for variant, document in documents.items():
        assert document["outputs"]["label"]["dtype"] == "int64"
        assert document["outputs"]["probabilities"]["dtype"] == "float32"  # fp16 keeps fp32 I/O


def test_each_variant_has_its_own_outputs(run_cli, tmp_path, recipes_dir):
    repository = tmp_path / "repository"
    build_tiny(run_cli, repository, recipes_dir)
    variants = manifest_of(repository)["models"]["tiny"]["variants"]
    files = [r["reference"]["file"] for r in variants.values() if "reference" in r]
    assert len(set(files)) == len(files)
    outputs = {
        v: read_reference(repository, r)["outputs"]["probabilities"]["data"]
        for v, r in variants.items()
        if "reference" in r
    }
    if "int8-dynamic" in outputs:
        assert outputs["int8-dynamic"] != outputs["fp32"]


def test_building_twice_gives_identical_reference_files(run_cli, tmp_path, recipes_dir):
    first, second = tmp_path / "first", tmp_path / "second"
    for repository in (first, second):
        build_tiny(run_cli, repository, recipes_dir, "--force")
    records = [
        {v: r.get("reference") for v, r in manifest_of(root)["models"]["tiny"]["variants"].items()}
        for root in (first, second)
    ]
    assert records[0] == records[1]
    for record in records[0].values():
        if record:
            assert (first / record["file"]).read_bytes() == (second / record["file"]).read_bytes()


def test_references_are_kept_by_commit_and_garbage_collected_with_their_variant(
    run_cli, tmp_path, recipes_dir, write_recipe
):
    repository = tmp_path / "repository"
    build_tiny(run_cli, repository, recipes_dir)
    old = {
        r["reference"]["file"]
        for r in manifest_of(repository)["models"]["tiny"]["variants"].values()
        if "reference" in r
    }
    assert all((repository / f).exists() for f in old)
    write_recipe("tiny", ALPHA="1e-2")  # other weights: other outputs, other reference files
    build_tiny(run_cli, repository, recipes_dir)
    new = {
        r["reference"]["file"]
        for r in manifest_of(repository)["models"]["tiny"]["variants"].values()
        if "reference" in r
    }
    assert all((repository / f).exists() for f in new)
    assert not any((repository / f).exists() for f in old - new)


def test_a_rejected_variant_keeps_its_reference(run_cli, tmp_path, recipes_dir, monkeypatch):
    verdict = measure.verdict
    monkeypatch.setattr(
        measure, "verdict", lambda name, *a, **kw: "rejected by the test" if name == "fp16" else verdict(name, *a, **kw)
    )
    repository = tmp_path / "repository"
    build_tiny(run_cli, repository, recipes_dir)
    assert manifest_of(repository)["models"]["tiny"]["variants"]["fp16"]["status"] == "rejected"
    assert "fp16" in check_references(repository, "tiny", REFERENCE_ROWS)


# ------------------------------------------------------------------------------- imported graphs


def _import(run_cli, repository: Path, path: Path, name: str) -> None:
    code, _, err = run_cli("--repository", repository, "import", path, "--name", name, "--quiet")
    assert code == 0, err


def _matmul_folder(folder: Path, x_shape: list, bias_shape: list | None, rows: int) -> Path:
    """model.onnx (y = x @ W [+ b]) and a test_data_set_0 with `rows` rows of x."""
    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.standard_normal((8, 4)).astype(np.float32), "W")
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)]
    nodes = [helper.make_node("MatMul", ["x", "W"], ["y" if bias_shape is None else "xw"], name="matmul")]
    feeds = {"x": rng.standard_normal((rows, 8)).astype(np.float32)}
    if bias_shape is not None:
        inputs.append(helper.make_tensor_value_info("b", TensorProto.FLOAT, bias_shape))
        nodes.append(helper.make_node("Add", ["xw", "b"], ["y"], name="add"))
        feeds["b"] = rng.standard_normal(bias_shape).astype(np.float32)
    output = helper.make_tensor_value_info("y", TensorProto.FLOAT, [x_shape[0], 4])
    graph = helper.make_graph(nodes, "matmul", inputs, [output], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    folder.mkdir(parents=True)
    onnx.save(model, folder / "model.onnx")
    session = runtime.create_session(model.SerializeToString())
    testdata.write_set(folder, 0, feeds, {"y": session.run(["y"], feeds)[0]})
    return folder


@pytest.mark.parametrize(
    ("x_shape", "bias_shape", "expected_rows"),
    [
        pytest.param(["batch", 8], None, REFERENCE_ROWS, id="named-batch-cut"),
        pytest.param([-1, 8], None, REFERENCE_ROWS, id="unnamed-batch-cut"),
        pytest.param([5, 8], None, None, id="fixed-shape-whole"),
        pytest.param(["batch", 8], [4], None, id="one-input-without-batch-whole"),
    ],
)
def test_imported_models(run_cli, tmp_path, x_shape, bias_shape, expected_rows):
    repository = tmp_path / "repository"
    folder = _matmul_folder(tmp_path / "model", [None if d == -1 else d for d in x_shape], bias_shape, rows=5)
    _import(run_cli, repository, folder, "imported")
    assert manifest_of(repository)["models"]["imported"]["inputs"][0]["shape"][0] == x_shape[0]
    check_references(repository, "imported", expected_rows)


# ------------------------------------------------------------------------------- the helper


def test_reference_inputs_rules():
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    scalar = np.array(3, dtype=np.int64)
    cut, rows = reference_inputs({"x": x}, [{"name": "x", "shape": ["batch", 3]}], True)
    assert rows == 2 and cut["x"].shape == (2, 3)
    cut, rows = reference_inputs({"x": x[:1]}, [{"name": "x", "shape": [-1, 3]}], True)
    assert rows == 1 and cut["x"].shape == (1, 3)
    for feeds, inputs, batch_axis in [
        ({"x": x}, [{"name": "x", "shape": ["batch", 3]}], False),  # not a batch axis (batch_axis.batch_axis)
        ({"x": x[:0]}, [{"name": "x", "shape": ["batch", 3]}], True),  # no rows
        ({"x": x, "k": scalar}, [{"name": "x", "shape": ["batch", 3]}, {"name": "k", "shape": []}], True),  # scalar
    ]:
        whole, rows = reference_inputs(feeds, inputs, batch_axis)
        assert rows == 1 and all(whole[k] is feeds[k] for k in feeds)


# ------------------------------------------------------------------------------- demo models


@pytest.mark.slow
@pytest.mark.parametrize("model", DEMOS)
def test_demo_models_publish_references(demo_repository, model):
    entry = manifest_of(demo_repository)["models"][model]
    assert all("reference" in entry["variants"][v] for v in VARIANTS if entry["variants"][v]["status"] == "ok")
    check_references(demo_repository, model, REFERENCE_ROWS)


def test_string_tensors_travel_as_texts_not_as_memory():
    strings = np.array([b"ph", "o\u00efn".encode(), b"e"], dtype=object).reshape(1, 3)
    encoded = tensor_json.encode({"phs": strings})
    assert encoded["phs"] == {"dtype": "object", "shape": [1, 3], "data": ["ph", "o\u00efn", "e"]}
    assert tensor_json.decode(encoded)["phs"].tolist() == [["ph", "o\u00efn", "e"]]
