"""Model files saved by LightGBM (`save_model`: text) and XGBoost (`save_model`: .json or .ubj), imported as
the libraries' own models: sniffed, loaded by their library, converted like a recipe's (export_trees.py), and
the library's predictions are the golden outputs the build checks the ONNX file against.

The feature count comes from the file; the inputs are one float32 `features` tensor [batch, features].
Classifiers (binary and multiclass objectives) answer `label` and `probabilities`, the rest one `prediction`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from onnxport.convert.intake import lightgbm_text, xgboost_document
from onnxport.convert.intake.tree_limits import TreeLimits
from onnxport.errors import UsageError
from onnxport.recipe import Feeds, SourceModel

LIGHTGBM_CLASSIFIERS = ("binary", "multiclass", "multiclassova")
XGBOOST_CLASSIFIERS = ("binary:logistic", "multi:softprob")
XGBOOST_REFUSED = ("multi:softmax", "binary:hinge", "binary:logitraw")  # labels or margins, no probabilities


def sniff(path: Path) -> str | None:
    """ "lightgbm", "xgboost" or None (anything else: read as ONNX), from the file's first bytes."""
    with path.open("rb") as handle:
        head = handle.read(256)
    if head.startswith(b"tree\n") and b"\nversion=v" in head:
        return "lightgbm"
    # JSON: {"learner": ...; UBJSON: '{', a length marker and its bytes, then "learner".
    if head.startswith(b"{") and b"learner" in head[:32]:
        return "xgboost"
    return None


def source_model(path: Path, framework: str, limits: TreeLimits = TreeLimits()) -> SourceModel:
    """The file's model, once the counts it declares are checked against limits (tree_limits.py): the libraries
    trust them, and a crafted count crashes them or takes GBs."""
    (lightgbm_text.check if framework == "lightgbm" else xgboost_document.check)(path, limits)
    booster, features, classes = _load(path, framework)
    classifier = classes > 0
    outputs = ["label", "probabilities"] if classifier else ["prediction"]
    sample = np.zeros((1, features), np.float32)

    def run(feeds: Feeds) -> dict[str, np.ndarray]:
        x = feeds["features"]
        if framework == "lightgbm":
            raw = np.asarray(booster.predict(x), np.float64)
        else:
            import xgboost

            raw = np.asarray(booster.predict(xgboost.DMatrix(x)), np.float64)
        if not classifier:
            return {"prediction": raw.reshape(-1, 1).astype(np.float32)}
        probabilities = np.column_stack([1 - raw, raw]) if raw.ndim == 1 else raw
        # predict_proba's argmax, as the libraries' classifiers label (a tie goes to the lower class).
        return {
            "label": probabilities.argmax(axis=1).astype(np.int64),
            "probabilities": probabilities.astype(np.float32),
        }

    return SourceModel(
        framework=framework,
        model=booster,
        input_names=["features"],
        output_names=outputs,
        dynamic_axes={name: {0: "batch"} for name in ["features", *outputs]},
        sample_inputs={"features": sample},
        golden_inputs={"features": sample},
        calibration_inputs=[],
        run=run,
    )


def _load(path: Path, framework: str):
    """(booster, feature count, classes: 0 for a regressor or ranker)."""
    try:
        if framework == "lightgbm":
            import lightgbm

            booster = lightgbm.Booster(model_file=str(path))
            objective = str(booster.dump_model(num_iteration=0)["objective"]).split()[0]
            if objective in LIGHTGBM_CLASSIFIERS:
                return booster, booster.num_feature(), max(booster.num_model_per_iteration(), 2)
            return booster, booster.num_feature(), 0
        import xgboost

        tree_booster = xgboost.Booster()
        tree_booster.load_model(str(path))
        objective = json.loads(tree_booster.save_config())["learner"]["objective"]["name"]
    except ModuleNotFoundError:
        raise
    except Exception as exc:  # the library's own refusal of a damaged file
        raise UsageError(f"{path}: {framework} cannot load it ({' '.join(str(exc).split())[:300]})") from exc
    if objective in XGBOOST_REFUSED:
        raise UsageError(
            f"{path}: an XGBoost model with objective {objective!r}, which predicts labels or margins; "
            f"expected a probability objective ({', '.join(XGBOOST_CLASSIFIERS)}) or a regression one"
        )
    classes = 0
    if objective in XGBOOST_CLASSIFIERS:
        classes = max(int(json.loads(tree_booster.save_config())["learner"]["learner_model_param"]["num_class"]), 2)
    return tree_booster, tree_booster.num_features(), classes
