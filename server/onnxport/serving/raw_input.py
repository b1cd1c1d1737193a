"""Raw input over the V2 API, for a model whose manifest entry has a pipeline (docs/server.md, "Raw input").

A request whose only input is `text` (BYTES, shape [n], or [n, 2] for a pair model) or `image` (BYTES, shape [n]:
each element an image file's bytes with the binary extension, or its base64 text in JSON) is made into the
model's tensors by the Python side of the pipeline (onnxport/pipelines/), the same one `onnxport check` holds the
browser's side to. The response adds an output `answer`: one JSON text per row, the pipeline's answer. A model
whose own graph has an input named `text` or `image` takes it as a tensor, as always.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from onnxport.pipelines import answers, image, text
from onnxport.pipelines.spec import ImageSpec, PipelineSpec, TextSpec
from onnxport.serving.catalog import Catalog
from onnxport.serving.protocol import InferRequest, OverBudget, ProtocolError

ANSWER = "answer"


@dataclass(frozen=True)
class Budget:
    """What one raw-input request may cost, from the raw_max_* settings (docs/server.md, "Limits"): checked on
    the request's own figures (rows, bytes, image headers) before any text is tokenized or image decoded."""
    rows: int
    text_bytes: int
    image_pixels: int
    request_pixels: int

    @classmethod
    def of(cls, settings: Mapping[str, Any]) -> Budget:
        return cls(settings["raw_max_rows"], settings["raw_max_text_bytes"], settings["raw_max_image_pixels"],
                   settings["raw_max_request_pixels"])

    def check_rows(self, kind: str, value: np.ndarray) -> None:
        rows = int(value.shape[0]) if value.ndim else 0
        if rows == 0:
            raise ProtocolError(f"input {kind!r}: shape {list(value.shape)} holds no {kind}; send at least one row")
        if rows > self.rows:
            raise OverBudget(f"input {kind!r}: {rows:,} rows; this server takes at most {self.rows:,} per request "
                             "(setting raw_max_rows): send them in several requests")


@dataclass
class Raw:
    """A raw request made into tensors: `request` is what the model runs; finish() adds the answer."""
    request: InferRequest
    spec: PipelineSpec
    wanted: list[str] | None  # the outputs the client asked for (None: all, and the answer)

    def finish(self, outputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        found = answers.answers(self.spec["answer"], outputs[self.spec["answer"]["output"]], self.request.inputs)
        outputs = {**outputs, ANSWER: np.array([json.dumps(a, ensure_ascii=False).encode() for a in found],
                                               dtype=object)}
        return outputs if self.wanted is None else {name: outputs[name] for name in self.wanted}


def prepare(catalog: Catalog, model: str, request: InferRequest, budget: Budget) -> Raw | None:
    """The request with the tensors the model's pipeline makes of its raw input, or None if it carries tensors."""
    entry = catalog.model(model)
    spec = entry.get("pipeline")
    graph_inputs = {i["name"] for i in entry["inputs"]}
    kind = next((k for k in ("text", "image") if k in request.inputs and k not in graph_inputs), None)
    if kind is None:
        return None
    if spec is None or kind not in spec:
        has = f"a pipeline for {next(k for k in ('text', 'image') if k in spec)}" if spec else "no pipeline"
        article = "an" if kind == "image" else "a"
        raise ProtocolError(f"input {kind!r}: raw {kind} needs a model with {article} {kind} pipeline; {model!r} has "
                            f"{has} and takes its inputs as tensors: {', '.join(sorted(graph_inputs))}")
    if len(request.inputs) != 1:
        others = sorted(set(request.inputs) - {kind})
        raise ProtocolError(f"input {kind!r} is raw {kind}, which comes alone; also sent: {', '.join(others)}")
    value = request.inputs[kind]
    if value.dtype != object:
        raise ProtocolError(f"input {kind!r}: raw {kind} is BYTES, got {value.dtype.name}")
    wanted = request.outputs
    outputs = [o["name"] for o in entry["outputs"]]
    if wanted is not None:
        for name in wanted:
            if name != ANSWER and name not in outputs:
                raise ProtocolError(f"unknown output {name!r}; the model's outputs are {', '.join(outputs)}, "
                                    f"and {ANSWER!r} for raw input")
    needed = outputs if wanted is None else sorted({spec["answer"]["output"], *wanted} - {ANSWER})
    if kind == "text":
        feeds = _text_feeds(catalog, entry, spec["text"], value, budget)
    else:
        feeds = _image_feeds(spec["image"], value, budget)
    tensors = InferRequest(id=request.id, inputs=feeds, outputs=needed, binary_outputs=request.binary_outputs,
                           binary_by_default=request.binary_by_default)
    return Raw(tensors, spec, wanted)


def _text_feeds(catalog: Catalog, entry: dict[str, Any], spec: TextSpec, value: np.ndarray,
                budget: Budget) -> dict[str, np.ndarray]:
    pair = spec["pair"]
    if not (value.ndim == 2 and value.shape[1] == 2 if pair else value.ndim == 1):
        want = "[n, 2] (pairs of texts)" if pair else "[n] (one text per row)"
        raise ProtocolError(f"input 'text': shape {list(value.shape)}; this model takes {want}")
    budget.check_rows("text", value)
    size = sum(len(item) if isinstance(item, bytes) else len(str(item).encode()) for item in value.reshape(-1))
    if size > budget.text_bytes:
        raise OverBudget(f"input 'text': {size:,} bytes of text; this server takes at most {budget.text_bytes:,} "
                         "per request (setting raw_max_text_bytes)")
    try:
        rows: list[text.Text] = [(_utf8(row[0]), _utf8(row[1])) if pair else _utf8(row) for row in value.tolist()]
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"input 'text': not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    asset = entry["assets"][spec["tokenizer"]]
    return _text_pipeline(json.dumps(spec, sort_keys=True), catalog.file(asset["file"])).encode(rows)


@functools.lru_cache(maxsize=16)
def _text_pipeline(spec_json: str, tokenizer_file: Path) -> text.TextPipeline:
    # A tokenizer takes tens of milliseconds to build; a tokenizer file is an immutable artifact.
    return text.TextPipeline(json.loads(spec_json), tokenizer_file)


def _utf8(item: Any) -> str:
    return item.decode("utf-8") if isinstance(item, bytes) else str(item)


def _image_feeds(spec: ImageSpec, value: np.ndarray, budget: Budget) -> dict[str, np.ndarray]:
    if value.ndim != 1:
        raise ProtocolError(f"input 'image': shape {list(value.shape)}; it takes [n], one image file per row")
    budget.check_rows("image", value)
    files = []
    for index, item in enumerate(value.tolist()):
        data = item if isinstance(item, bytes) else str(item).encode()
        # Magic numbers of image files, TIFF's included so that the decoder names the format it refuses.
        if not data.startswith((b"\x89PNG", b"\xff\xd8", b"GIF8", b"RIFF", b"BM", b"II*\x00", b"MM\x00*")):
            try:  # JSON carries an image as base64 text
                data = base64.b64decode(data, validate=True)
            except (binascii.Error, ValueError):
                raise ProtocolError(f"input 'image' row {index}: neither an image file nor base64 text of "
                                    f"one ({len(data)} bytes starting {data[:12]!r})") from None
        files.append(data)
    try:
        return image.ImagePipeline(spec).encode(files, budget.image_pixels, budget.request_pixels)
    except image.ImageTooLarge as exc:
        setting = "raw_max_image_pixels" if exc.per == "image" else "raw_max_request_pixels"
        raise OverBudget(f"input 'image' {exc} (setting {setting})") from None
    except image.ImageError as exc:
        raise ProtocolError(f"input 'image' {exc}") from None
