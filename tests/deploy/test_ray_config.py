"""`onnxport deploy ray` (deploy/ray_config.py): Ray's own schema accepts the Serve config, the RayService
carries the same application, and the application builder it names builds."""

from __future__ import annotations

import importlib

import pytest
import yaml

IMAGE = "registry.example/onnxport:0.1.0"


@pytest.fixture
def written(tmp_path, demo_repository, run_cli):
    out = tmp_path / "ray"
    code, stdout, err = run_cli(
        "--repository", demo_repository, "deploy", "ray", "--out", out, "--replicas", "3", "--image", IMAGE
    )
    assert code == 0, err
    assert "serve deploy" in stdout and "kubectl apply" in stdout
    return out


def test_the_serve_config_passes_rays_schema(written, demo_repository):
    from ray.serve.schema import ServeDeploySchema

    config = ServeDeploySchema.model_validate(yaml.safe_load((written / "serve.yaml").read_text()))
    (application,) = config.applications
    assert application.import_path == "onnxport.serving.ray.engine:app" and application.route_prefix == "/"
    assert application.args == {"repository": str(demo_repository.resolve())}
    assert application.deployments[0].num_replicas == 3


def test_the_ray_service_runs_the_same_application(written):
    from ray.serve.schema import ServeDeploySchema

    service = yaml.safe_load((written / "rayservice.yaml").read_text())
    assert service["apiVersion"] == "ray.io/v1" and service["kind"] == "RayService"
    serve_config = yaml.safe_load(service["spec"]["serveConfigV2"])
    assert serve_config["applications"] == yaml.safe_load((written / "serve.yaml").read_text())["applications"]
    ServeDeploySchema.model_validate(serve_config)
    cluster = service["spec"]["rayClusterConfig"]
    assert cluster["rayVersion"] == importlib.import_module("ray").__version__
    images = {
        c["image"]
        for group in [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]
        for c in group["template"]["spec"]["containers"]
    }
    assert images == {IMAGE}


def test_autoscale_instead_of_replicas(tmp_path, demo_repository, run_cli):
    out = tmp_path / "ray"
    assert (
        run_cli("--repository", demo_repository, "deploy", "ray", "--out", out, "--autoscale", "1:4", "--image", IMAGE)[
            0
        ]
        == 0
    )
    (deployment,) = yaml.safe_load((out / "serve.yaml").read_text())["applications"][0]["deployments"]
    assert deployment["autoscaling_config"] == {"min_replicas": 1, "max_replicas": 4}
    assert "num_replicas" not in deployment


def test_the_builder_the_config_names_builds_the_application(demo_repository):
    from ray.serve import Application

    from onnxport.serving.ray import engine as ray_engine

    assert isinstance(ray_engine.app({"repository": str(demo_repository)}), Application)


def test_a_bad_autoscale_is_one_line(tmp_path, run_cli, assert_one_line_error):
    code, _, err = run_cli("deploy", "ray", "--out", tmp_path / "ray", "--autoscale", "4:1", "--image", IMAGE)
    assert code == 2
    assert_one_line_error(err, "--autoscale", "'4:1'", "MIN:MAX")
    assert not (tmp_path / "ray").exists()
