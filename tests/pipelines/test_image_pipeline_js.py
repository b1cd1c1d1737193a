"""The browser library's image steps (web/lib/pipelines/image.js, run by node) against Pillow's
(server/onnxport/pipelines/image.py), on the same decoded pixels: every corpus image, every resize filter, grey and RGB,
shrinking and enlarging. They must agree exactly: the library ports Pillow's fixed-point convolution. (Decoding is the
browser's own; tests/browser/test_browser_image_pipeline.py compares it in Chromium.)"""

from __future__ import annotations

import base64
import json
import subprocess

import numpy as np
import pytest

from onnxport.pipelines import corpus, image
from onnxport.project import PROJECT_ROOT

SCRIPT = """
import { readFileSync } from "node:fs";
import { pixelsOf, tensorOf } from "%(lib)s";
const cases = JSON.parse(readFileSync(0, "utf8"));
const out = cases.map(({ spec, width, height, rgba }) => {
  const pixels = pixelsOf(spec, { width, height, channels: 4, data: new Uint8Array(Buffer.from(rgba, "base64")) });
  const t = tensorOf(spec, pixels);
  return { pixels: Buffer.from(pixels.data).toString("base64"), shape: [pixels.height, pixels.width, pixels.channels],
           tensor: Buffer.from(t.data.buffer).toString("base64"), dims: t.dims };
});
process.stdout.write(JSON.stringify(out));
"""

FILTERS = ["nearest", "box", "bilinear", "bicubic", "lanczos"]
SIZES = [(8, 8), (13, 7), (50, 41)]


def spec(mode: str, width: int, height: int, filter_name: str, crop=None, layout="NCHW") -> dict:
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


def run_node(cases: list[dict]) -> list[dict]:
    script = SCRIPT % {"lib": (PROJECT_ROOT / "web/lib/pipelines/image.js").as_uri()}
    done = subprocess.run(
        ["node", "--input-type=module", "-e", script],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("mode", ["L", "RGB", "BGR"])
def test_every_filter_and_size_gives_pillows_pixels_and_tensor(mode):
    cases, expected = [], []
    for name, data in corpus.images().items():
        rgba = image.decode(data)
        for filter_name in FILTERS:
            for width, height in SIZES:
                for crop, layout in ((None, "NCHW"), ({"width": 6, "height": 5, "filter": "box"}, "NHWC")):
                    s = spec(mode, width, height, filter_name, crop, layout)
                    cases.append(
                        {
                            "spec": s,
                            "width": rgba.shape[1],
                            "height": rgba.shape[0],
                            "rgba": base64.b64encode(rgba.tobytes()).decode(),
                        }
                    )
                    pixels = image.pixels_of(s, data)
                    expected.append(
                        (
                            f"{name}, {filter_name} {width}x{height}, crop {crop is not None}",
                            pixels,
                            image.tensor_of(s, pixels),
                        )
                    )
    for (label, pixels, tensor), got in zip(expected, run_node(cases)):
        browser = np.frombuffer(base64.b64decode(got["pixels"]), np.uint8).reshape(got["shape"])
        assert browser.shape == pixels.shape, f"{label}: shape {browser.shape}, Pillow {pixels.shape}"
        if not np.array_equal(browser, pixels):
            at = tuple(int(i) for i in np.argwhere(browser != pixels)[0])
            pytest.fail(
                f"{label}: first differing pixel (row, column, channel) {at}: browser {browser[at]}, "
                f"Pillow {pixels[at]}; {int((browser != pixels).sum())} of {pixels.size} differ"
            )
        values = np.frombuffer(base64.b64decode(got["tensor"]), np.float32).reshape(got["dims"])
        np.testing.assert_array_equal(values, tensor, err_msg=label)
