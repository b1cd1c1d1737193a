"""`onnxport deploy ray --out DIR`: the Ray Serve config and a KubeRay RayService for the V2 API.

`serve.yaml` runs on any Ray cluster where onnxport is installed and the repository folder is at the
same path on every node (`serve deploy serve.yaml`, or `serve run serve.yaml` for a local try).
`rayservice.yaml` is the same application for KubeRay on Kubernetes (`kubectl apply -f`): its image
must have onnxport installed (`--image`) and the repository mounted at `--repository`'s path.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from onnxport.deploy.triton import write_atomically
from onnxport.errors import UsageError
from onnxport.json_boundary import JsonObject

RAY_VERSION = "2.60.0"  # pyproject.toml's ray extra
IMPORT_PATH = "onnxport.serving.ray.engine:app"


def serve_config(
    repository: str, replicas: int, autoscale: tuple[int, int] | None, port: int, max_ongoing: int = 32
) -> JsonObject:
    deployment: JsonObject = {"name": "v2", "max_ongoing_requests": max_ongoing}
    if autoscale is not None:
        deployment["autoscaling_config"] = {"min_replicas": autoscale[0], "max_replicas": autoscale[1]}
    else:
        deployment["num_replicas"] = replicas
    return {
        "proxy_location": "EveryNode",
        "http_options": {"host": "0.0.0.0", "port": port},
        "applications": [
            {
                "name": "onnxport",
                "route_prefix": "/",
                "import_path": IMPORT_PATH,
                "args": {"repository": repository},
                "deployments": [deployment],
            }
        ],
    }


def ray_service(config: JsonObject, image: str, workers: int) -> JsonObject:
    def container(name: str) -> JsonObject:
        return {"name": name, "image": image, "resources": {"requests": {"cpu": "2", "memory": "4Gi"}}}

    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "onnxport"},
        "spec": {
            "serveConfigV2": yaml.safe_dump({"applications": config["applications"]}, sort_keys=False),
            "rayClusterConfig": {
                "rayVersion": RAY_VERSION,
                "headGroupSpec": {
                    "rayStartParams": {"dashboard-host": "0.0.0.0"},
                    "template": {"spec": {"containers": [container("ray-head")]}},
                },
                "workerGroupSpecs": [
                    {
                        "groupName": "workers",
                        "replicas": workers,
                        "minReplicas": 1,
                        "maxReplicas": max(workers, 1),
                        "rayStartParams": {},
                        "template": {"spec": {"containers": [container("ray-worker")]}},
                    }
                ],
            },
        },
    }


def write_deploy(
    out: Path,
    repository: Path,
    replicas: int,
    autoscale: tuple[int, int] | None,
    port: int,
    image: str,
    workers: int,
    max_ongoing: int = 32,
) -> list[str]:
    if replicas < 1 or workers < 1 or max_ongoing < 1:
        raise UsageError("--replicas, --workers and --max-ongoing-requests must be at least 1")
    config = serve_config(str(Path(repository).resolve()), replicas, autoscale, port, max_ongoing)

    def write(folder: Path) -> list[str]:
        (folder / "serve.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        (folder / "rayservice.yaml").write_text(yaml.safe_dump(ray_service(config, image, workers), sort_keys=False))
        return ["serve.yaml", "rayservice.yaml"]

    return write_atomically(out, write)
