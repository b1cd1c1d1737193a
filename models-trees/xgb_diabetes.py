"""xgb_diabetes: an XGBoost regressor (disease progression after a year) on scikit-learn's bundled diabetes data."""

import numpy as np

from onnxport import Recipe, SourceModel, Tolerance


def load() -> SourceModel:
    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import train_test_split
    from xgboost import XGBRegressor

    x, y = load_diabetes(return_X_y=True)
    train_x, test_x, train_y, test_y = train_test_split(x.astype(np.float32), y, test_size=0.3, random_state=0)
    model = XGBRegressor(n_estimators=50, max_depth=4, random_state=0, n_jobs=1).fit(train_x, train_y)
    return SourceModel(
        framework="xgboost",
        model=model,
        input_names=["features"],
        output_names=["prediction"],
        dynamic_axes={"features": {0: "batch"}, "prediction": {0: "batch"}},
        sample_inputs={"features": test_x[:1]},
        golden_inputs={"features": test_x},
        calibration_inputs=[],
        # The ONNX regressor answers [batch, 1].
        run=lambda feeds: {"prediction": model.predict(feeds["features"]).astype(np.float32).reshape(-1, 1)},
        facts={"dataset": "sklearn.datasets.load_diabetes", "test_r2": model.score(test_x, test_y)},
    )


# Predictions near 150: XGBoost sums leaves in float32 too, in another order (1e-5 relative).
RECIPE = Recipe(
    name="xgb_diabetes",
    task="regression",
    description="Diabetes progression (XGBoost regressor).",
    load=load,
    tolerance=Tolerance(abs=1e-3, rel=1e-5),
    metric_output="prediction",
    playground="tabular",
)
