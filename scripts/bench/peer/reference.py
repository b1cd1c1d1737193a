"""The reference embeddings: onnxport's server, minilm fp32 (native onnxruntime), raw text in through the V2 API,
in the same batches the browser sides use; and the cosine of each browser embedding against them."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import numpy as np


def server_embeddings(base_url: str, texts: list[str], *, batch: int, variant: str = "fp32") -> np.ndarray:
    """[len(texts), 384] float32: the server's `sentence_embedding` for each text, `batch` texts a request."""
    url = f"{base_url.rstrip('/')}/v2/models/minilm/versions/{variant}/infer"
    rows = []
    for start in range(0, len(texts), batch):
        part = texts[start : start + batch]
        body = {
            "inputs": [{"name": "text", "shape": [len(part)], "datatype": "BYTES", "data": part}],
            "outputs": [{"name": "sentence_embedding"}],
        }
        request = urllib.request.Request(
            url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                answer = json.load(response)
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"POST {url}: HTTP {exc.code}: {exc.read()[:300]!r}") from None
        output = next(o for o in answer["outputs"] if o["name"] == "sentence_embedding")
        rows.append(np.asarray(output["data"], np.float32).reshape(output["shape"]))
    return np.concatenate(rows)


def cosines(embeddings: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity of two [n, d] arrays."""
    a = np.asarray(embeddings, np.float64)
    b = np.asarray(reference, np.float64)
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
