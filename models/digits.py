"""digits: a small PyTorch CNN trained here on scikit-learn's bundled 8x8 digit images."""

import numpy as np

from onnxport import Recipe, SourceModel, Tolerance

SEED = 0
EPOCHS = 12


def _network():
    import torch
    from torch import nn

    class DigitsCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(1, 32, 3, padding=1),
                nn.ReLU(),
                nn.Conv2d(32, 64, 3, padding=1),
                nn.ReLU(),
                nn.MaxPool2d(2),
            )
            self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(64 * 4 * 4, 128), nn.ReLU(), nn.Linear(128, 10))

        def forward(self, pixels: torch.Tensor) -> torch.Tensor:
            return self.classifier(self.features(pixels))

    return DigitsCNN()


def load() -> SourceModel:
    import torch
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    images, labels = load_digits(return_X_y=True)
    # Pixels are 0..16; the model takes 0..1 in NCHW.
    images = (images / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    train_x, test_x, train_y, test_y = train_test_split(
        images, labels, test_size=0.2, random_state=SEED, stratify=labels
    )

    # One thread and a fixed seed: the same recipe gives the same weights, byte for byte.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(SEED)
        model = _network()
        optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
        loss_fn = torch.nn.CrossEntropyLoss()
        x, y = torch.from_numpy(train_x), torch.from_numpy(train_y)
        generator = torch.Generator().manual_seed(SEED)
        for _ in range(EPOCHS):
            order = torch.randperm(len(x), generator=generator)
            for start in range(0, len(x), 64):
                batch = order[start : start + 64]
                optimizer.zero_grad()
                loss_fn(model(x[batch]), y[batch]).backward()
                optimizer.step()
        model.eval()
        with torch.no_grad():
            test_logits = model(torch.from_numpy(test_x)).numpy()
    finally:
        torch.set_num_threads(threads)

    def run(feeds):
        with torch.no_grad():
            return {"logits": model(torch.from_numpy(feeds["pixels"])).numpy()}

    return SourceModel(
        framework="pytorch",
        model=model,
        input_names=["pixels"],
        output_names=["logits"],
        dynamic_axes={"pixels": {0: "batch"}, "logits": {0: "batch"}},
        sample_inputs={"pixels": test_x[:1]},
        golden_inputs={"pixels": test_x},
        calibration_inputs=[{"pixels": train_x[i : i + 32]} for i in range(0, 320, 32)],
        run=run,
        facts={
            "dataset": "sklearn.datasets.load_digits",
            "train_size": len(train_x),
            "test_size": len(test_x),
            "epochs": EPOCHS,
            "test_accuracy": float((test_logits.argmax(1) == test_y).mean()),
        },
        golden_labels=test_y.astype(np.int64),
    )


# An image file in, the three likeliest digits out: grey, shrunk to 8x8 by averaging (Pillow's box filter), and
# inverted, since the training data is light ink (high values) on a dark ground and a photo of a digit is not.
PIPELINE = {
    "image": {
        "input": "pixels",
        "mode": "L",
        "resize": {"width": 8, "height": 8, "filter": "box"},
        "crop": None,
        "invert": True,
        "scale": 1.0,
        "mean": [0.0],
        "std": [1.0],
        "layout": "NCHW",
        "dtype": "float32",
    },
    "answer": {
        "output": "logits",
        "steps": [{"op": "softmax"}, {"op": "top_k", "k": 3, "labels": [str(d) for d in range(10)]}],
    },
}

RECIPE = Recipe(
    name="digits",
    task="classification",
    description="Handwritten digit 0-9 from an 8x8 grey image (PyTorch CNN).",
    load=load,
    tolerance=Tolerance(abs=1e-4, rel=1e-4),
    metric_output="logits",
    playground="image-8x8",
    pipeline=PIPELINE,
)
