"""Raw input over the V2 API, for a model whose manifest entry has a pipeline (docs/reference/server.md, "Raw input").

A request whose only input is `text` (BYTES, shape [n], or [n, 2] for a pair model) or `image` (BYTES, shape [n]:
each element an image file's bytes with the binary extension, or its base64 text in JSON), or another kind of
pipelines/kinds.py, is made into the model's tensors by the Python side of the pipeline (onnxport/pipelines/),
the same one `onnxport check` holds the browser's side to. The response adds an output `answer`: one JSON text
per row, the pipeline's answer. A model whose own graph has an input named `text` or `image` takes it as a
tensor, as always.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from onnxport.pipelines import answers, kinds
from onnxport.pipelines.raw import Limits, OverLimit, RawInputError
from onnxport.pipelines.spec import PipelineSpec
from onnxport.serving.models.catalog import Catalog
from onnxport.serving.v2.protocol import InferRequest, OverBudget, ProtocolError

ANSWER = "answer"


@dataclass
class Raw:
    """A raw request made into tensors: `request` is what the model runs; finish() adds the answer."""

    request: InferRequest
    spec: PipelineSpec
    wanted: list[str] | None  # the outputs the client asked for (None: all, and the answer)

    def finish(self, outputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        found = answers.answers(self.spec["answer"], outputs[self.spec["answer"]["output"]], self.request.inputs)
        outputs = {
            **outputs,
            ANSWER: np.array([json.dumps(a, ensure_ascii=False).encode() for a in found], dtype=object),
        }
        return outputs if self.wanted is None else {name: outputs[name] for name in self.wanted}


def prepare(catalog: Catalog, model: str, request: InferRequest, limits: Limits) -> Raw | None:
    """The request with the tensors the model's pipeline makes of its raw input, or None if it carries tensors.
    Each kind's own checks and feeds are its module's (pipelines/kinds.py)."""
    entry = catalog.model(model)
    spec = entry.get("pipeline")
    graph_inputs = {i["name"] for i in entry["inputs"]}
    kind = next((k for name, k in kinds.KINDS.items() if name in request.inputs and name not in graph_inputs), None)
    if kind is None:
        return None
    name = kind.name
    if spec is None or name not in spec:
        has = f"a pipeline for {kinds.of(spec).name}" if spec else "no pipeline"
        raise ProtocolError(
            f"input {name!r}: raw {name} needs a model with {kind.article} {name} pipeline; "
            f"{model!r} has {has} and takes its inputs as tensors: {', '.join(sorted(graph_inputs))}"
        )
    if len(request.inputs) != 1:
        others = sorted(set(request.inputs) - {name})
        raise ProtocolError(f"input {name!r} is raw {name}, which comes alone; also sent: {', '.join(others)}")
    value = request.inputs[name]
    if value.dtype != object:
        raise ProtocolError(f"input {name!r}: raw {name} is BYTES, got {value.dtype.name}")
    wanted = request.outputs
    outputs = [o["name"] for o in entry["outputs"]]
    if wanted is not None:
        for output in wanted:
            if output != ANSWER and output not in outputs:
                raise ProtocolError(
                    f"unknown output {output!r}; the model's outputs are {', '.join(outputs)}, "
                    f"and {ANSWER!r} for raw input"
                )
    needed = outputs if wanted is None else sorted({spec["answer"]["output"], *wanted} - {ANSWER})
    try:
        feeds = kind.feeds(spec[name], value, limits, lambda label: catalog.file(entry["assets"][label]["file"]))
    except OverLimit as exc:
        raise OverBudget(str(exc)) from None
    except RawInputError as exc:
        raise ProtocolError(str(exc)) from None
    tensors = InferRequest(
        id=request.id,
        inputs=feeds,
        outputs=needed,
        binary_outputs=request.binary_outputs,
        binary_by_default=request.binary_by_default,
    )
    return Raw(tensors, spec, wanted)
