"""Tree model files are checked against the counts they declare before LightGBM or XGBoost reads them.

Each hostile file is a tiny real model saved by its library, then edited as an attacker would: on the code
before these checks, each crashed the library (SIGSEGV, SIGABRT) or grew past GBs. Now each is one line,
exit 2, naming the field and the limit, and nothing is written; the real files still import.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from onnxport.convert.intake.import_budgets import ImportBudgets
from onnxport.convert.intake.tree_limits import SETTINGS, TreeLimits
from onnxport.project import PROJECT_ROOT
from onnxport.serving import config


def _data():
    from sklearn.datasets import load_wine

    x, y = load_wine(return_X_y=True)
    return x.astype(np.float32), y


@pytest.fixture(scope="module")
def lightgbm_text(tmp_path_factory) -> str:
    from lightgbm import LGBMClassifier

    path = tmp_path_factory.mktemp("lgb") / "model.txt"
    LGBMClassifier(n_estimators=2, num_leaves=4, verbose=-1).fit(*_data()).booster_.save_model(path)
    return path.read_text()


@pytest.fixture(scope="module")
def xgboost_json(tmp_path_factory) -> dict:
    from xgboost import XGBClassifier

    path = tmp_path_factory.mktemp("xgb") / "model.json"
    XGBClassifier(n_estimators=2, max_depth=2, n_jobs=1).fit(*_data()).save_model(path)
    return json.loads(path.read_text())


def _import(run_cli, tmp_path: Path, path: Path, **settings: str) -> tuple[int, str]:
    """`onnxport import` in its own process (this one has started the libraries' thread pools), with
    ONNXPORT_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONNXPORT_")}
    env.update({f"ONNXPORT_{k.upper()}": v for k, v in settings.items()})
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "onnxport",
            "--repository",
            str(tmp_path / "repository"),
            "import",
            str(path),
            "--name",
            "mine",
            "--forms",
            "none",
            "--quiet",
        ],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, done.stderr


def _refused(run_cli, assert_one_line_error, tmp_path, path, *fragments, **settings):
    code, err = _import(run_cli, tmp_path, path, **settings)
    assert code == 2, err
    assert_one_line_error(err, str(path), "refusing it before the library reads it", *fragments)
    assert not (tmp_path / "repository" / "manifest.json").exists()


@pytest.mark.parametrize(
    "edit, fragments",
    [
        (
            ("num_class=3\n", "num_class=1000000000\n"),
            ("num_class is 1,000,000,000", "10,000", "import_max_tree_classes"),
        ),
        (
            ("num_leaves=4\n", "num_leaves=1000000000\n"),
            ("Tree=0 num_leaves is 1,000,000,000", "1,000,000", "import_max_tree_leaves"),
        ),
        (("num_leaves=4\n", "num_leaves=1e9\n"), ("Tree=0 num_leaves is '1e9'", "expected a whole number")),
        (("max_feature_idx=12\n", "max_feature_idx=2000000000\n"), ("max_feature_idx", "import_max_tree_features")),
        (("split_feature=12 ", "split_feature=2000000000 "), ("Tree=0 split_feature[0] is 2000000000", "0 to 12")),
        (("left_child=", "left_child=-9 "), ("Tree=0 left_child", "entries")),
        (("tree_sizes=", "tree_sizes=9"), ("tree_sizes[0]", "bytes long")),
    ],
)
def test_a_lightgbm_file_declaring_too_much_is_one_line(
    run_cli, assert_one_line_error, tmp_path, lightgbm_text, edit, fragments
):
    old, new = edit
    assert old in lightgbm_text
    path = tmp_path / "hostile.txt"
    path.write_text(lightgbm_text.replace(old, new, 1))
    _refused(run_cli, assert_one_line_error, tmp_path, path, *fragments)


def test_a_lightgbm_child_out_of_its_tree_is_one_line(run_cli, assert_one_line_error, tmp_path, lightgbm_text):
    line = next(x for x in lightgbm_text.splitlines() if x.startswith("left_child="))
    values = line.split("=")[1].split()
    path = tmp_path / "hostile.txt"
    path.write_text(lightgbm_text.replace(line, "left_child=" + " ".join([*values[:-1], "-99"]), 1))
    _refused(run_cli, assert_one_line_error, tmp_path, path, "Tree=0 left_child[2] is -99", "allows -4 to 2")


def _tree(document: dict) -> dict:
    return document["learner"]["gradient_booster"]["model"]["trees"][0]


@pytest.mark.parametrize(
    "change, fragments",
    [
        (
            lambda d: d["learner"]["learner_model_param"].update(num_class="1000000000"),
            ("learner.learner_model_param.num_class is 1,000,000,000", "import_max_tree_classes"),
        ),
        (
            lambda d: d["learner"]["learner_model_param"].update(num_feature="2000000000"),
            ("num_feature is 2,000,000,000", "1,000,000", "import_max_tree_features"),
        ),
        (lambda d: _tree(d)["left_children"].__setitem__(0, 99999), ("tree 0 left_children[0] is 99999",)),
        (lambda d: _tree(d)["split_indices"].__setitem__(0, 2000000000), ("tree 0 split_indices", "num_feature=13")),
        (lambda d: _tree(d)["right_children"].pop(), ("tree 0 right_children has 6 entries",)),
    ],
)
def test_an_xgboost_file_declaring_too_much_is_one_line(
    run_cli, assert_one_line_error, tmp_path, xgboost_json, change, fragments
):
    document = json.loads(json.dumps(xgboost_json))
    change(document)
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(document))
    _refused(run_cli, assert_one_line_error, tmp_path, path, *fragments)


def test_xgboost_json_nested_100000_deep_is_refused_before_parsing(run_cli, assert_one_line_error, tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"learner": ' + "[" * 100_000 + "]" * 100_000 + "}")
    _refused(run_cli, assert_one_line_error, tmp_path, path, "nests deeper than 64 levels")


def test_an_xgboost_ubjson_file_is_read_and_checked(run_cli, assert_one_line_error, tmp_path, xgboost_json):
    import xgboost

    booster = xgboost.Booster()
    booster.load_model(bytearray(json.dumps(xgboost_json).encode()))
    booster.save_model(tmp_path / "model.ubj")
    code, err = _import(run_cli, tmp_path, tmp_path / "model.ubj")
    assert code == 0, err
    # The same file with a split index out of range: UBJSON stores it as a big-endian int32 in a typed array.
    data = (tmp_path / "model.ubj").read_bytes()
    marker = data.index(b"split_indices[$l#")
    count_at = marker + len(b"split_indices[$l#")
    first = count_at + 1 + {b"L": 8, b"l": 4, b"I": 2, b"U": 1, b"i": 1}[data[count_at : count_at + 1]]
    hostile = tmp_path / "hostile.ubj"
    hostile.write_bytes(data[:first] + (2_000_000_000).to_bytes(4, "big") + data[first + 4 :])
    _refused(run_cli, assert_one_line_error, tmp_path / "another", hostile, "split_indices", "2000000000")


def test_the_limits_are_settings_with_the_same_defaults(run_cli, assert_one_line_error, tmp_path, lightgbm_text):
    loaded = config.load({})
    assert ImportBudgets.from_settings(loaded) == ImportBudgets()
    assert {SETTINGS[f]: getattr(TreeLimits(), f) for f in SETTINGS} == {
        SETTINGS[f]: loaded[SETTINGS[f]] for f in SETTINGS
    }
    path = tmp_path / "model.txt"
    path.write_text(lightgbm_text)
    _refused(
        run_cli,
        assert_one_line_error,
        tmp_path,
        path,
        "Tree=0 num_leaves is 4",
        "limit of 3",
        "import_max_tree_leaves",
        import_max_tree_leaves="3",
    )
    code, err = _import(run_cli, tmp_path, path)
    assert code == 0, err
