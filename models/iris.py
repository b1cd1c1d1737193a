"""iris: a scikit-learn pipeline (standard scaler + small MLP) on the bundled iris data."""

import numpy as np

from onnxport import Recipe, SourceModel, Tolerance

SEED = 0


def load() -> SourceModel:
    from sklearn.datasets import load_iris
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    features, labels = load_iris(return_X_y=True)
    features = features.astype(np.float32)
    train_x, test_x, train_y, test_y = train_test_split(
        features, labels, test_size=0.3, random_state=SEED, stratify=labels
    )
    pipeline = make_pipeline(
        StandardScaler(),
        MLPClassifier(hidden_layer_sizes=(16,), max_iter=2000, random_state=SEED),
    )
    pipeline.fit(train_x, train_y)

    def run(feeds):
        x = feeds["features"]
        return {
            "label": pipeline.predict(x).astype(np.int64),
            "probabilities": pipeline.predict_proba(x).astype(np.float32),
        }

    return SourceModel(
        framework="sklearn",
        model=pipeline,
        input_names=["features"],
        output_names=["label", "probabilities"],
        dynamic_axes={"features": {0: "batch"}, "label": {0: "batch"}, "probabilities": {0: "batch"}},
        sample_inputs={"features": test_x[:1]},
        golden_inputs={"features": test_x},
        calibration_inputs=[{"features": train_x[i : i + 16]} for i in range(0, len(train_x), 16)],
        run=run,
        facts={
            "dataset": "sklearn.datasets.load_iris",
            "train_size": len(train_x),
            "test_size": len(test_x),
            "test_accuracy": float(pipeline.score(test_x, test_y)),
        },
        golden_labels=test_y.astype(np.int64),
    )


RECIPE = Recipe(
    name="iris",
    task="classification",
    description="Iris species from four flower measurements (scikit-learn scaler + MLP).",
    load=load,
    # sklearn computes in float64, the export in float32.
    tolerance=Tolerance(abs=1e-5, rel=1e-4),
    metric_output="probabilities",
    playground="tabular",
)
