"""`onnxport export triton|kserve` (deploy/): Triton's own ModelConfig schema parses every config.pbtxt,
whose dims and datatypes match the manifest, and nothing is left half-written."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
from pathlib import Path

import pytest
import tritonclient
import yaml
from google.protobuf import text_format

from demo_variants import MODEL_VARIANTS, SKIPPED
from onnxport.deploy.triton import MAX_BATCH_SIZE, TRITON_TYPES, model_name


def model_config_pb2():
    """Triton's ModelConfig, from the file the tritonclient wheel ships (importing it through
    tritonclient.grpc would need grpcio; the protobuf runtime is all it needs)."""
    path = Path(tritonclient.__file__).parent / "grpc" / "model_config_pb2.py"
    spec = importlib.util.spec_from_file_location("triton_model_config_pb2", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def triton_export(demo_repository, tmp_path_factory):
    from onnxport.cli import main

    out = tmp_path_factory.mktemp("triton") / "models"
    assert main(["--repository", str(demo_repository), "export", "triton", str(out)]) == 0
    return out


def test_one_triton_model_per_served_variant(triton_export):
    assert sorted(p.name for p in triton_export.iterdir()) == sorted(model_name(m, v) for m, v in MODEL_VARIANTS)
    assert not any(p.name.startswith("iris_int8") for p in triton_export.iterdir()), SKIPPED


@pytest.mark.parametrize("model, variant", MODEL_VARIANTS)
def test_config_parses_as_model_config_and_matches_the_manifest(
    triton_export, demo_manifest, demo_repository, model, variant
):
    name = model_name(model, variant)
    config = text_format.Parse((triton_export / name / "config.pbtxt").read_text(), model_config_pb2().ModelConfig())
    entry = demo_manifest["models"][model]
    assert config.name == name and config.platform == "onnxruntime_onnx"
    assert config.max_batch_size == MAX_BATCH_SIZE  # every demo model has a dynamic batch axis
    assert config.HasField("dynamic_batching")
    assert [(g.count, g.kind) for g in config.instance_group] == [(1, model_config_pb2().ModelInstanceGroup.KIND_CPU)]
    data_type = model_config_pb2().DataType
    for tensors, declared in ((config.input, entry["inputs"]), (config.output, entry["outputs"])):
        assert [t.name for t in tensors] == [v["name"] for v in declared]
        for tensor, value in zip(tensors, declared):
            assert data_type.Name(tensor.data_type) == TRITON_TYPES[value["dtype"]]
            expected = [d if isinstance(d, int) else -1 for d in value["shape"][1:]]
            if expected:
                assert list(tensor.dims) == expected
            else:  # [batch] alone: dims [1] reshaped to a scalar per row
                assert list(tensor.dims) == [1] and list(tensor.reshape.shape) == []
    record = entry["variants"][variant]
    data = (triton_export / name / "1" / "model.onnx").read_bytes()
    assert hashlib.sha256(data).hexdigest() == record["sha256"]


def test_kserve_export_is_an_inference_service_over_the_triton_repository(demo_repository, tmp_path, run_cli):
    out = tmp_path / "kserve"
    code, stdout, err = run_cli(
        "--repository", demo_repository, "export", "kserve", out, "--storage-uri", "s3://bucket/onnxport"
    )
    assert code == 0, err
    service = yaml.safe_load((out / "inferenceservice.yaml").read_text())
    assert service["apiVersion"] == "serving.kserve.io/v1beta1" and service["kind"] == "InferenceService"
    model = service["spec"]["predictor"]["model"]
    assert model == {
        "modelFormat": {"name": "onnx"},
        "protocolVersion": "v2",
        "runtime": "kserve-tritonserver",
        "storageUri": "s3://bucket/onnxport",
    }
    assert sorted(p.name for p in (out / "models").iterdir()) == sorted(model_name(m, v) for m, v in MODEL_VARIANTS)
    assert "kubectl apply" in stdout


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["--storage-uri", "bucket/onnxport"], ["--storage-uri", "s3://"]),
        (["--storage-uri", "s3://b/p", "--name", "Onnx_Port"], ["--name", "'Onnx_Port'", "lower-case"]),
    ],
)
def test_kserve_arguments_are_checked(demo_repository, tmp_path, run_cli, assert_one_line_error, args, fragments):
    code, _, err = run_cli("--repository", demo_repository, "export", "kserve", tmp_path / "out", *args)
    assert code == 2
    assert_one_line_error(err, *fragments)
    assert not (tmp_path / "out").exists()


def test_an_existing_folder_is_not_overwritten(demo_repository, tmp_path, run_cli, assert_one_line_error):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    code, _, err = run_cli("--repository", demo_repository, "export", "triton", tmp_path / "out")
    assert code == 2
    assert_one_line_error(err, "already exists")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["keep.txt"]


def test_a_failed_export_leaves_nothing_behind(
    demo_repository, demo_manifest, tmp_path, run_cli, assert_one_line_error
):
    broken = tmp_path / "repository"
    shutil.copytree(demo_repository, broken)
    (broken / demo_manifest["models"]["minilm"]["variants"]["fp16"]["file"]).unlink()
    code, _, err = run_cli("--repository", broken, "export", "triton", tmp_path / "out")
    assert code == 1
    assert_one_line_error(err, "minilm fp16", "not in", "onnxport build")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["repository"]  # no out, no staging folder
    json.loads((broken / "manifest.json").read_text())
