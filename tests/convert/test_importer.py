"""`onnxport import`: ONNX files and test directories, and every way they can be bad."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxport import cli
from onnxport.repository import variant_table

BACKEND = Path(__file__).resolve().parents[1] / "data" / "onnx-backend"


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _one_line_error(err: str, *fragments: str) -> None:
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("onnxport: error:"), err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def _listing(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".lock"
    }


def _matmul_model(opset: int = 17) -> onnx.ModelProto:
    weight = numpy_helper.from_array(np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32), "W")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"], name="matmul")],
        "matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        [weight],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    return tmp_path / "repo"


@pytest.fixture
def backend_data() -> Path:
    if not (BACKEND / "test_Conv2d" / "model.onnx").exists():
        pytest.fail("ONNX backend test data missing: run `make testdata` (scripts/testdata/fetch_onnx_backend.py)")
    return BACKEND


@pytest.mark.parametrize(
    "directory", ["test_Conv2d", "test_conv_with_strides_padding", "test_matmul_2d", "test_Linear"]
)
def test_backend_test_directory_imports_and_fp32_matches_expected_outputs(capsys, repository, backend_data, directory):
    code, out, err = _cli(
        capsys, "--repository", str(repository), "import", str(backend_data / directory), "--name", "imported"
    )
    assert code == 0, err
    entry = json.loads((repository / "manifest.json").read_text())["models"]["imported"]
    assert entry["kind"] == "onnx"
    assert entry["validation"]["within_tolerance"] is True
    for errors in entry["validation"]["outputs"].values():
        assert errors["max_abs"] < 1e-4
    assert entry["variants"]["fp32"]["status"] == "ok"
    assert set(entry["variants"]) == set(variant_table.NAMES)
    assert "test_data_set" in entry["facts"]["golden_data"]
    assert "imported" in out


def test_old_opset_is_upgraded_so_onnxruntime_can_run_it(capsys, repository, backend_data):
    code, _, err = _cli(
        capsys,
        "--repository",
        str(repository),
        "import",
        str(backend_data / "test_Linear"),
        "--name",
        "linear",
        "--quiet",
    )
    assert code == 0, err
    entry = json.loads((repository / "manifest.json").read_text())["models"]["linear"]
    assert entry["facts"]["opset_upgraded"].endswith("-> 13")
    assert entry["opset"] == 13


def test_onnx_file_without_test_data_gets_seeded_golden_inputs(capsys, tmp_path, repository):
    path = tmp_path / "plain.onnx"
    onnx.save(_matmul_model(), path)
    assert _cli(capsys, "--repository", str(repository), "import", str(path), "--name", "plain", "--quiet")[0] == 0
    first = json.loads((repository / "manifest.json").read_text())["models"]["plain"]
    assert "seeded" in first["facts"]["golden_data"]
    golden = repository / first["golden"]["path"] / "test_data_set_0" / "input_0.pb"
    tensor = numpy_helper.to_array(onnx.load_tensor(str(golden)))
    assert tensor.shape == (2, 8) and tensor.dtype == np.float32
    # Same file, same bytes: a second import is skipped and changes nothing.
    before = _listing(repository)
    code, out, _ = _cli(capsys, "--repository", str(repository), "import", str(path), "--name", "plain")
    assert code == 0 and "skipped" in out
    assert _listing(repository) == before


def test_external_data_inside_the_folder_is_inlined(capsys, tmp_path, repository):
    folder = tmp_path / "model"
    folder.mkdir()
    onnx.save(
        _matmul_model(), folder / "model.onnx", save_as_external_data=True, location="weights.bin", size_threshold=0
    )
    assert (folder / "weights.bin").exists()
    code, _, err = _cli(
        capsys, "--repository", str(repository), "import", str(folder / "model.onnx"), "--name", "ext", "--quiet"
    )
    assert code == 0, err
    entry = json.loads((repository / "manifest.json").read_text())["models"]["ext"]
    stored = onnx.load(str(repository / entry["variants"]["fp32"]["file"]), load_external_data=False)
    assert not any(t.data_location == TensorProto.EXTERNAL for t in stored.graph.initializer)


def _import_fails(capsys, repository: Path, path: Path, *fragments: str, code_expected: int = 1) -> None:
    # A first good model, so "unchanged" means something.
    good = path.parent / "good.onnx"
    onnx.save(_matmul_model(), good)
    assert _cli(capsys, "--repository", str(repository), "import", str(good), "--name", "good", "--quiet")[0] == 0
    before = _listing(repository)
    code, _, err = _cli(capsys, "--repository", str(repository), "import", str(path), "--name", "bad", "--quiet")
    assert code == code_expected, err
    _one_line_error(err, *fragments)
    assert _listing(repository) == before
    assert not (repository / ".staging").exists()


def test_file_that_is_not_onnx(capsys, tmp_path, repository):
    path = tmp_path / "notes.onnx"
    path.write_bytes(b"these are not the bytes of a model\n" * 10)
    _import_fails(capsys, repository, path, str(path), "not an ONNX model", code_expected=2)  # a usage error


def test_truncated_file(capsys, tmp_path, repository, backend_data):
    data = (backend_data / "test_Conv2d" / "model.onnx").read_bytes()
    path = tmp_path / "truncated.onnx"
    path.write_bytes(data[: len(data) // 2])
    _import_fails(capsys, repository, path, str(path), "not an ONNX model", code_expected=2)


def test_empty_file(capsys, tmp_path, repository):
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    _import_fails(capsys, repository, path, "empty", code_expected=2)


def test_missing_path(capsys, tmp_path, repository):
    _import_fails(capsys, repository, tmp_path / "nowhere.onnx", "no such file", code_expected=2)


def test_unsupported_opset(capsys, tmp_path, repository):
    path = tmp_path / "future.onnx"
    onnx.save(_matmul_model(opset=99), path)
    _import_fails(capsys, repository, path, "unsupported opset 99", "knows opsets 1 to")


@pytest.mark.parametrize("location", ["../secret.bin", "/etc/passwd", "sub/../../secret.bin"])
def test_external_data_that_escapes_the_folder_is_refused(capsys, tmp_path, repository, location):
    folder = tmp_path / "model"
    folder.mkdir()
    (tmp_path / "secret.bin").write_bytes(np.zeros(32, np.float32).tobytes())
    model = _matmul_model()
    weight = model.graph.initializer[0]
    weight.ClearField("raw_data")
    weight.data_location = TensorProto.EXTERNAL
    weight.external_data.add(key="location", value=location)
    (folder / "model.onnx").write_bytes(model.SerializeToString())
    _import_fails(capsys, repository, folder / "model.onnx", "outside the model's folder", repr(location))


def test_symlinked_external_data_that_escapes_is_refused(capsys, tmp_path, repository):
    folder = tmp_path / "model"
    folder.mkdir()
    (tmp_path / "secret.bin").write_bytes(np.zeros(32, np.float32).tobytes())
    (folder / "weights.bin").symlink_to(tmp_path / "secret.bin")
    model = _matmul_model()
    weight = model.graph.initializer[0]
    weight.ClearField("raw_data")
    weight.data_location = TensorProto.EXTERNAL
    weight.external_data.add(key="location", value="weights.bin")
    (folder / "model.onnx").write_bytes(model.SerializeToString())
    _import_fails(capsys, repository, folder / "model.onnx", "outside the model's folder")


def test_test_directory_without_model(capsys, tmp_path, repository):
    folder = tmp_path / "tests"
    folder.mkdir()
    _import_fails(capsys, repository, folder, "must contain model.onnx", code_expected=2)


def test_test_directory_with_wrong_input_count(capsys, tmp_path, repository, backend_data):
    folder = tmp_path / "conv"
    shutil.copytree(backend_data / "test_conv_with_strides_padding", folder)
    (folder / "test_data_set_0" / "input_1.pb").unlink()
    _import_fails(capsys, repository, folder, "1 input files for a model with 2 inputs")


def test_a_dynamic_dimension_written_as_minus_one_gets_seeded_inputs(capsys, tmp_path, repository):
    # paddle2onnx writes a dynamic batch as dim_value -1 rather than a dim_param (rapidocr's models).
    model = _matmul_model()
    model.graph.input[0].type.tensor_type.shape.dim[0].Clear()
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = -1
    path = tmp_path / "minus_one.onnx"
    onnx.save(model, path)
    code, _, err = _cli(capsys, "--repository", str(repository), "import", str(path), "--name", "minus-one")
    assert code == 0, err
    entry = json.loads((repository / "manifest.json").read_text())["models"]["minus-one"]
    golden = repository / entry["golden"]["path"] / "test_data_set_0" / "input_0.pb"
    assert numpy_helper.to_array(onnx.load_tensor(str(golden))).shape == (2, 8)
    assert entry["golden_data"] == "synthetic" and "synthetic inputs" in err
