"""lgbm_wine: a LightGBM multiclass classifier (three cultivars) on scikit-learn's bundled wine data."""

import numpy as np

from onnxport import Recipe, SourceModel, Tolerance


def load() -> SourceModel:
    from lightgbm import LGBMClassifier
    from sklearn.datasets import load_wine
    from sklearn.model_selection import train_test_split

    x, y = load_wine(return_X_y=True)
    train_x, test_x, train_y, test_y = train_test_split(
        x.astype(np.float32), y, test_size=0.3, random_state=0, stratify=y
    )
    model = LGBMClassifier(n_estimators=50, num_leaves=15, random_state=0, verbose=-1).fit(train_x, train_y)
    return SourceModel(
        framework="lightgbm",
        model=model,
        input_names=["features"],
        output_names=["label", "probabilities"],
        dynamic_axes={"features": {0: "batch"}, "label": {0: "batch"}, "probabilities": {0: "batch"}},
        sample_inputs={"features": test_x[:1]},
        golden_inputs={"features": test_x},
        calibration_inputs=[],
        run=lambda feeds: {
            "label": model.predict(feeds["features"]).astype(np.int64),
            "probabilities": model.predict_proba(feeds["features"]).astype(np.float32),
        },
        facts={"dataset": "sklearn.datasets.load_wine", "test_accuracy": model.score(test_x, test_y)},
        golden_labels=test_y.astype(np.int64),
    )


# LightGBM sums leaves in float64, the ONNX model in float32.
RECIPE = Recipe(
    name="lgbm_wine",
    task="classification",
    description="Wine cultivar from 13 measurements (LightGBM, 3 classes).",
    load=load,
    tolerance=Tolerance(abs=1e-5, rel=1e-4),
    metric_output="probabilities",
    playground="tabular",
)
