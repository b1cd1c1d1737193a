"""Export LightGBM and XGBoost models to ONNX with onnxmltools.

The converters write `ai.onnx.ml` TreeEnsembleClassifier / TreeEnsembleRegressor nodes. What they get wrong
silently is fixed or refused here, before the build's check against the library (convert/model_build.py) sees it:
- a LightGBM threshold is a double and LightGBM sends x left when x <= threshold; the ONNX node holds it as
  a float32 rounded to nearest, which can round up past a feature value and send that row the other way
  (load_diabetes: one held-back row of 133 off by 3.4). Thresholds are rounded down to float32 first: for a
  float32 x, x <= t exactly when x <= the largest float32 not above t, so both give the same split;
- a LightGBM `linear_tree` model's leaves are linear models, which onnxmltools drops: refused;
- the converters take float32 features only: a recipe's float64 (or integer) input is refused by name.
"""

from __future__ import annotations

import copy
import re
import warnings

import numpy as np
import onnx

from onnxport.errors import RecipeError
from onnxport.recipe import SourceModel

FRAMEWORKS = ("lightgbm", "xgboost")
# onnxmltools 1.16 writes at most opset 15 in the default domain; the graph is raised to the build's opset after.
CONVERTER_MAX_OPSET = 15
THRESHOLD_LINE = re.compile(r"^threshold=(.*)$", re.MULTILINE)
TREE_SIZES_LINE = re.compile(r"^tree_sizes=.*\n", re.MULTILINE)
DECISION_LINE = re.compile(r"^decision_type=(.*)$", re.MULTILINE)
CATEGORICAL_BIT = 1  # LightGBM's decision_type bit 0: a categorical split (its tree.h)


def export_trees(source: SourceModel, opset: int, round_thresholds: bool = True) -> onnx.ModelProto:
    """The source's tree ensemble as ONNX, its outputs named as the recipe names them.

    `round_thresholds=False` converts LightGBM thresholds as onnxmltools does on its own (the test shows the
    build's check refusing that model)."""
    initial_types = _initial_types(source)
    target = min(opset, CONVERTER_MAX_OPSET)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the converters' deprecation noise
        if source.framework == "lightgbm":
            from onnxmltools import convert_lightgbm

            model = _checked_lightgbm(source.model)
            if round_thresholds:
                model = float32_thresholds(model)
            # zipmap off: probabilities as a plain [batch, classes] tensor. ZipMap's sequence of maps is
            # readable by no browser runtime and by no V2 datatype.
            converted = convert_lightgbm(model, initial_types=initial_types, target_opset=target, zipmap=False)
        else:
            from onnxmltools import convert_xgboost

            try:
                # convert_xgboost has no zipmap option: it writes probabilities as a tensor already.
                converted = convert_xgboost(source.model, initial_types=initial_types, target_opset=target)
            except (ValueError, RuntimeError, NotImplementedError) as exc:  # an XGBRanker: "No proper operator..."
                raise RecipeError(
                    f"onnxmltools cannot convert this {type(source.model).__name__}: "
                    f"{' '.join(str(exc).split())}; it converts XGBClassifier and XGBRegressor"
                ) from exc
    _rename_outputs(converted, source.output_names)
    return _raise_default_opset(converted, opset)


def _initial_types(source: SourceModel) -> list:
    from onnxmltools.convert.common.data_types import FloatTensorType

    types = []
    for name in source.input_names:
        sample = source.sample_inputs[name]
        # Both converters accept FloatTensorType alone (LightGBM's classifier refuses a double input; the
        # nodes hold float32 thresholds whatever the input is), so a float64 recipe would be checked against
        # predictions made on values the ONNX model never sees.
        if sample.dtype != np.float32 or sample.ndim != 2:
            raise RecipeError(
                f"input {name!r}: {source.framework}'s converter (onnxmltools) expects float32 features of shape "
                f"[batch, features], got {sample.dtype} of shape {list(sample.shape)}; train and predict on "
                "x.astype(np.float32)"
            )
        types.append((name, FloatTensorType([None, sample.shape[1]])))
    return types


def _checked_lightgbm(model):
    text = _booster(model).model_to_string()
    if re.search(r"^is_linear=1$", text, re.MULTILINE):
        raise RecipeError(
            "a LightGBM model trained with linear_tree=True: onnxmltools drops the leaves' linear "
            "models and would answer with their constants; train it without linear_tree"
        )
    return model


def float32_thresholds(model):
    """A copy of the LightGBM model whose numerical thresholds are the largest float32 not above them.

    For float32 features it predicts what the original predicts, and its thresholds survive the converter's
    float32 attributes exactly. Categorical splits (their thresholds index category sets) stay as they are."""
    text = _booster(model).model_to_string()
    decisions = iter(DECISION_LINE.findall(text))

    def rounded(match: re.Match) -> str:
        kinds = [int(d) for d in next(decisions).split()]
        values = match.group(1).split()
        out = []
        for kind, value in zip(kinds, values):
            if kind & CATEGORICAL_BIT:
                out.append(value)
                continue
            exact = float(value)
            down = np.float32(exact)
            if float(down) > exact:
                down = np.nextafter(down, np.float32(-np.inf))
            out.append(repr(float(down)))
        return "threshold=" + " ".join(out)

    import lightgbm

    # tree_sizes gives each tree's length in bytes, which the rewrite changes; without it LightGBM reads the
    # trees one after another.
    booster = lightgbm.Booster(model_str=TREE_SIZES_LINE.sub("", THRESHOLD_LINE.sub(rounded, text)))
    if isinstance(model, lightgbm.Booster):
        return booster
    clone = copy.copy(model)  # the recipe's estimator keeps its own booster: its predictions stay the reference
    clone._Booster = booster
    return clone


def _booster(model):
    import lightgbm

    if isinstance(model, lightgbm.Booster):
        return model
    if isinstance(model, lightgbm.LGBMModel):
        return model.booster_
    raise RecipeError(
        f"framework 'lightgbm': the model is a {type(model).__name__}; expected an LGBMClassifier, "
        "LGBMRegressor, LGBMRanker or lightgbm.Booster"
    )


def _rename_outputs(model: onnx.ModelProto, names: list[str]) -> None:
    """The converters name outputs label/probabilities or variable; the recipe's names win, in order."""
    outputs = list(model.graph.output)
    if len(outputs) != len(names):
        raise RecipeError(
            f"the converted model has {len(outputs)} outputs ({', '.join(o.name for o in outputs)}); "
            f"the recipe names {len(names)} ({', '.join(names)})"
        )
    renames = {o.name: n for o, n in zip(outputs, names) if o.name != n}
    for node in model.graph.node:
        for i, name in enumerate(node.output):
            if name in renames:
                node.output[i] = renames[name]
        for i, name in enumerate(node.input):
            if name in renames:
                node.input[i] = renames[name]
    for output in outputs:
        output.name = renames.get(output.name, output.name)


def _raise_default_opset(model: onnx.ModelProto, opset: int) -> onnx.ModelProto:
    """The default domain at the build's opset, like every other export (XGBoost's graph imports none: the
    fp16 variant's Casts need it)."""
    current = {o.domain: o.version for o in model.opset_import}
    if "" not in current:
        model.opset_import.add(domain="", version=opset)
    elif current[""] != opset:
        model = onnx.version_converter.convert_version(model, opset)
    # The IR version the converter chose for its own opset (4 for 9) would be too old for the build's.
    model.ir_version = max(model.ir_version, onnx.helper.find_min_ir_version_for(list(model.opset_import)))
    return model
