"""`onnxport export kserve OUT --storage-uri URI`: the Triton model repository plus a KServe
InferenceService that serves it with Triton (runtime kserve-tritonserver, protocol v2).

Upload OUT/models to the storage URI (an S3 or GCS bucket, a PVC), then `kubectl apply -f
OUT/inferenceservice.yaml`. KServe's Triton runtime speaks the same V2 protocol as `onnxport serve`,
with the Triton model names of deploy/triton.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from onnxport.deploy import triton
from onnxport.errors import UsageError
from onnxport.repository.store import Repository

NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")  # a Kubernetes resource name (DNS-1123 label)


def inference_service(name: str, storage_uri: str) -> str:
    # JSON strings are valid YAML scalars: no YAML library needed to quote them right.
    q = json.dumps
    return f"""apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: {q(name)}
spec:
  predictor:
    model:
      modelFormat:
        name: onnx
      protocolVersion: v2
      runtime: kserve-tritonserver
      storageUri: {q(storage_uri)}
"""


def write_export(repository: Repository, out: Path, storage_uri: str, name: str = "onnxport") -> list[str]:
    if not NAME.fullmatch(name) or len(name) > 63:
        raise UsageError(
            f"--name {name!r}: a Kubernetes name is lower-case letters, digits and '-', "
            "at most 63, starting and ending with a letter or digit"
        )
    if not re.match(r"^[a-z][a-z0-9+.-]*://\S+$", storage_uri):
        raise UsageError(f"--storage-uri {storage_uri!r}: expected a URI such as s3://bucket/path or pvc://claim/path")
    variants = triton.served_or_refuse(repository)

    def write(folder: Path) -> list[str]:
        (folder / "models").mkdir()
        names = triton.write_models(repository, variants, folder / "models")
        (folder / "inferenceservice.yaml").write_text(inference_service(name, storage_uri))
        return names

    return triton.write_atomically(out, write)
