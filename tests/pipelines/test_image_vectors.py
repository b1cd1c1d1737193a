"""Pillow's image steps (server/onnxport/pipelines/image.py) on the shared cases (tests/vectors/image_vectors.json):
every corpus image, every resize filter, grey and RGB, shrinking and enlarging.
tests/js/lib/pipelines/test_image_vectors.mjs runs web/lib/pipelines/image.js on the same decoded pixels, and the two
must agree exactly: the library ports Pillow's fixed-point convolution. (Decoding is the browser's own;
tests/browser/test_browser_image_pipeline.py compares it in Chromium.)"""

from __future__ import annotations

import pytest

from fixtures import vectors
from onnxport.pipelines import corpus

VECTORS = vectors.read("image_vectors")


@pytest.fixture(scope="module")
def now() -> dict:
    return vectors.rebuilt("image_vectors")


def test_the_vector_file_holds_the_decoded_images_and_specs_python_gives_now(now):
    assert VECTORS["images"] == now["images"], "run tests/vectors/make_image_vectors.py"
    assert VECTORS["specs"] == now["specs"]


@pytest.mark.parametrize("mode", ["L", "RGB", "BGR"])
def test_every_filter_and_size_has_pillows_pixels_and_tensor(now, mode):
    cases = [(w, p) for w, p in zip(VECTORS["cases"], now["cases"]) if VECTORS["specs"][w["spec"]]["mode"] == mode]
    assert len(cases) == len(corpus.images()) * 5 * 3 * 2
    for written, pillow in cases:
        assert written == pillow, f"{written['label']}: run tests/vectors/make_image_vectors.py"
