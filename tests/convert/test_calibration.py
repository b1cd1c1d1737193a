"""`onnxport import --calibration`: a test-set folder or a .npz, checked against the model's inputs."""

from __future__ import annotations

import numpy as np
import pytest

from onnxport.convert import calibration
from onnxport.errors import ModelFileError
from onnxport.repository import testdata


def test_an_npz_with_one_array_per_input_is_one_batch(tmp_path):
    path = tmp_path / "c.npz"
    np.savez(path, x=np.ones((2, 3), np.float32), mask=np.zeros((2, 3), np.int64))
    batches = calibration.load(path, ["x", "mask"])
    assert len(batches) == 1 and batches[0]["x"].shape == (2, 3) and batches[0]["mask"].dtype == np.int64


def test_an_npz_with_numbered_batches_keeps_their_order(tmp_path):
    path = tmp_path / "c.npz"
    np.savez(path, **{f"{k}/x": np.full((1, 3), k, np.float32) for k in (10, 2, 1)})
    assert [float(b["x"][0, 0]) for b in calibration.load(path, ["x"])] == [1.0, 2.0, 10.0]


@pytest.mark.parametrize(("arrays", "message"), [
    ({"y": np.ones(3)}, "key 'y' is neither an input name nor '<batch>/<input>'; the model's inputs are x, mask"),
    ({"0/x": np.ones(3)}, "batch '0' has no array for input(s) mask"),
])
def test_an_npz_that_does_not_fit_the_model_says_which_key(tmp_path, arrays, message):
    path = tmp_path / "c.npz"
    np.savez(path, **arrays)
    with pytest.raises(ModelFileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        calibration.load(path, ["x", "mask"])


def test_a_folder_of_test_sets_is_read_like_golden_data(tmp_path):
    for k in range(2):
        testdata.write_set(tmp_path, k, {"x": np.full((1, 3), k, np.float32)}, {})
    assert [float(b["x"][0, 0]) for b in calibration.load(tmp_path, ["x"])] == [0.0, 1.0]


@pytest.mark.parametrize("name", ["empty-folder", "c.txt", "broken.npz"])
def test_anything_else_is_refused_naming_the_file(tmp_path, name):
    path = tmp_path / name
    if name == "empty-folder":
        path.mkdir()
    else:
        path.write_text("not calibration data")
    with pytest.raises(ModelFileError, match=str(path)):
        calibration.load(path, ["x"])


def test_the_digest_changes_with_the_data(tmp_path):
    path = tmp_path / "c.npz"
    np.savez(path, x=np.ones(3))
    first = calibration.digest(path)
    np.savez(path, x=np.zeros(3))
    assert calibration.digest(path) != first and calibration.digest(None) is None
