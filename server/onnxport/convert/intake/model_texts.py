"""An imported ONNX file's free texts (doc_strings, metadata_props) cut to a size, right after parsing.

Every step of an import copies the model: the checker and shape inference serialize it, each onnxruntime
session and each variant holds its own copy, and the variants are written with it. A 400 MB doc_string made
a 400 MB file peak at 4.37 GB (11x). No step reads these texts, so each one longer than the budget (setting
import_max_text_bytes) is cut to it, once, before any copy is made, and the import says so in a note.
"""

from __future__ import annotations

from typing import Iterator

import onnx

TEXT_BUDGET = 64 * 1024  # a model card's worth; real doc_strings and metadata values are a few KB at most
SETTING = "import_max_text_bytes"


def cut_texts(model: onnx.ModelProto, limit: int = TEXT_BUDGET) -> list[str]:
    """Cut each text longer than limit bytes (UTF-8) in place; one note per text cut, naming it and its size."""
    notes = []
    for where, owner, field in _texts(model):
        text = getattr(owner, field)
        size = len(text.encode("utf-8")) if len(text) * 4 > limit else len(text)
        if size > limit:
            setattr(owner, field, text.encode("utf-8")[:limit].decode("utf-8", "ignore"))
            notes.append(f"{where} was {size:,} bytes, cut to {limit:,} (setting {SETTING})")
    return notes


def _texts(model: onnx.ModelProto) -> Iterator[tuple[str, object, str]]:
    """(what it is, the message holding it, its field) for every free text of the model."""
    yield "the model's doc_string", model, "doc_string"
    for entry in model.metadata_props:
        yield f"metadata_props key {entry.key[:40]!r}", entry, "key"
        yield f"metadata_props {entry.key[:40]!r}", entry, "value"
    for function in model.functions:
        yield f"function {function.name[:40]!r} doc_string", function, "doc_string"
        for node in function.node:
            yield from _node_texts(node)
    yield from _graph_texts(model.graph)


def _graph_texts(graph: onnx.GraphProto) -> Iterator[tuple[str, object, str]]:
    yield f"graph {graph.name[:40]!r} doc_string", graph, "doc_string"
    for value in (*graph.input, *graph.output, *graph.value_info):
        yield f"value {value.name[:40]!r} doc_string", value, "doc_string"
    for tensor in graph.initializer:
        yield f"initializer {tensor.name[:40]!r} doc_string", tensor, "doc_string"
    for node in graph.node:
        yield from _node_texts(node)


def _node_texts(node: onnx.NodeProto) -> Iterator[tuple[str, object, str]]:
    yield f"node {node.name[:40]!r} doc_string", node, "doc_string"
    for attribute in node.attribute:
        yield f"node {node.name[:40]!r} attribute {attribute.name[:40]!r} doc_string", attribute, "doc_string"
        for graph in (attribute.g, *attribute.graphs):
            yield from _graph_texts(graph)
