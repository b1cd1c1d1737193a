"""lgbm_rank: a LightGBM ranker (lambdarank) that orders diabetes patients by progression within groups of ten.

The bundled data has no queries of its own: each run of ten training rows is a group, and the relevance is the
progression cut into five grades. The ONNX model answers the ranker's score, one per row (higher = ranked first).
"""

import numpy as np

from onnxport import Recipe, SourceModel, Tolerance

GROUP = 10


def load() -> SourceModel:
    from lightgbm import LGBMRanker
    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import train_test_split

    x, y = load_diabetes(return_X_y=True)
    train_x, test_x, train_y, _ = train_test_split(x.astype(np.float32), y, test_size=0.3, random_state=0)
    rows = len(train_x) // GROUP * GROUP
    grades = np.digitize(train_y[:rows], np.quantile(train_y, [0.2, 0.4, 0.6, 0.8]))
    model = LGBMRanker(n_estimators=50, num_leaves=15, random_state=0, verbose=-1)
    model.fit(train_x[:rows], grades, group=[GROUP] * (rows // GROUP))
    return SourceModel(
        framework="lightgbm",
        model=model,
        input_names=["features"],
        output_names=["score"],
        dynamic_axes={"features": {0: "batch"}, "score": {0: "batch"}},
        sample_inputs={"features": test_x[:1]},
        golden_inputs={"features": test_x},
        calibration_inputs=[],
        run=lambda feeds: {"score": model.predict(feeds["features"]).astype(np.float32).reshape(-1, 1)},
        facts={"dataset": "sklearn.datasets.load_diabetes", "objective": "lambdarank", "group_size": GROUP},
    )


# Scores near 1: LightGBM sums leaves in float64, the ONNX model in float32.
RECIPE = Recipe(
    name="lgbm_rank",
    task="regression",
    description="Diabetes patients ranked by progression (LightGBM lambdarank).",
    load=load,
    tolerance=Tolerance(abs=1e-5, rel=1e-5),
    metric_output="score",
    playground="tabular",
)
