"""Write tests/vectors/image_vectors.json: Pillow's pixels and tensors (pipelines/image.py) on the corpus's images.

Every corpus image decoded (RGBA, zlib-deflated, base64); the specs: grey, RGB and BGR, every resize filter and size,
shrinking and enlarging, without and with a centre crop; a case for each image and spec: the spec's index, the
pixels' shape and sha256, the tensor's dims and the sha256 of its float32 bytes (little-endian). The browser must
agree exactly: web/lib/pipelines/image.js ports Pillow's fixed-point convolution. (Decoding is the browser's own;
tests/browser/test_browser_image_pipeline.py compares it in Chromium.)
tests/pipelines/test_image_vectors.py fails when the file is not what this script writes now;
tests/js/lib/pipelines/test_image_vectors.mjs runs the library's steps on the same pixels.
Run: .venv/bin/python tests/vectors/make_image_vectors.py
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from onnxport.pipelines import corpus, image

OUT = Path(__file__).with_name("image_vectors.json")
MODES = ["L", "RGB", "BGR"]
FILTERS = ["nearest", "box", "bilinear", "bicubic", "lanczos"]
SIZES = [(8, 8), (13, 7), (50, 41)]


def spec(mode: str, width: int, height: int, filter_name: str, crop=None, layout="NCHW") -> dict[str, Any]:
    channels = 1 if mode == "L" else 3
    return {
        "input": "x",
        "mode": mode,
        "resize": {"width": width, "height": height, "filter": filter_name},
        "crop": crop,
        "invert": mode == "L",
        "scale": 2.0,
        "mean": [0.5] * channels,
        "std": [0.25] * channels,
        "layout": layout,
        "dtype": "float32",
    }


def sha256(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def build() -> dict[str, Any]:
    specs = [
        spec(mode, width, height, filter_name, crop, layout)
        for mode in MODES
        for filter_name in FILTERS
        for width, height in SIZES
        for crop, layout in ((None, "NCHW"), ({"width": 6, "height": 5, "filter": "box"}, "NHWC"))
    ]
    images, cases = {}, []
    for name, data in corpus.images().items():
        rgba = image.decode(data)
        images[name] = {
            "width": rgba.shape[1],
            "height": rgba.shape[0],
            "rgba": base64.b64encode(zlib.compress(rgba.tobytes(), 9)).decode(),
        }
        for index, s in enumerate(specs):
            pixels = image.pixels_of(s, data)
            tensor = image.tensor_of(s, pixels)
            resize = s["resize"]
            cases.append(
                {
                    "label": f"{name}, {s['mode']} {resize['filter']} {resize['width']}x{resize['height']}, "
                    f"crop {s['crop'] is not None}",
                    "image": name,
                    "spec": index,
                    "shape": list(pixels.shape),
                    "pixels_sha256": sha256(pixels.astype(np.uint8)),
                    "dims": list(tensor.shape),
                    "tensor_sha256": sha256(tensor.astype("<f4")),
                }
            )
    about = "Written by tests/vectors/make_image_vectors.py."
    return {"about": about, "images": images, "specs": specs, "cases": cases}


def main() -> None:
    built = build()
    lines = [
        "{",
        f'"about": {json.dumps(built["about"])},',
        f'"images": {json.dumps(built["images"])},',
        f'"specs": {json.dumps(built["specs"])},',
        '"cases": [',
        ",\n".join(json.dumps(case) for case in built["cases"]),
        "]",
        "}",
    ]
    OUT.write_text("\n".join(lines) + "\n")
    print(f"wrote {len(built['cases'])} cases to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
