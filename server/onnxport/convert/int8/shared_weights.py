"""Identical initializers stored once: what quantizing a weight that is read twice leaves behind.

The quantizers make one int8 copy per reader, and per subgraph (quant_prep.localize_outer_weights
gives each subgraph its own copy of an outer weight, which onnxruntime's dynamic quantizer needs):
silero-vad's decoder LSTM weights, read in two nested `If` branches, were stored twice in its
int8-dynamic file. Sharing them changes no value, only where it is stored: the copy moves to the
innermost graph that holds all of its readers, where they see it as an outer-scope value.
"""

from __future__ import annotations

import hashlib

import onnx

from onnxport.convert import graph as graphs

MIN_BYTES = 1024  # smaller tensors (scales, zero points, shapes) are not worth moving


def share_identical_initializers(model: onnx.ModelProto) -> int:
    """Initializers of the same type, shape and bytes, in one graph or in several, become one
    (named after the first); returns the bytes saved."""
    scopes = list(_scopes(model.graph, ()))
    taken = graphs.value_names(model.graph)
    groups: dict[str, list[tuple[tuple[int, ...], onnx.GraphProto, onnx.TensorProto]]] = {}
    for path, graph in scopes:
        signature = {v.name for v in [*graph.input, *graph.output]}
        for init in graph.initializer:
            if init.name in signature or init.data_location == onnx.TensorProto.EXTERNAL:
                continue
            if init.ByteSize() >= MIN_BYTES:
                groups.setdefault(_content_key(init), []).append((path, graph, init))
    by_path = {path: graph for path, graph in scopes}
    saved = 0
    for members in groups.values():
        if len(members) < 2:
            continue
        home = by_path[_common_prefix([path for path, _, _ in members])]
        kept = onnx.TensorProto()
        kept.CopyFrom(members[0][2])
        kept.name = graphs.unique_name(f"{kept.name}_shared", taken)
        for _, graph, init in members:
            saved += init.ByteSize()
            old = init.name
            _drop(graph, old)
            _rename_reads(graph, {old: kept.name})
        home.initializer.append(kept)
        saved -= kept.ByteSize()
    return saved


def _scopes(graph: onnx.GraphProto, path: tuple[int, ...]):
    """(path, graph) of the graph and every subgraph; a path is the indices of the subgraphs
    walked into, so one path is a prefix of another exactly when that graph holds the other."""
    yield path, graph
    index = 0
    for node in graph.node:
        for _, sub in graphs.subgraphs(node):
            yield from _scopes(sub, (*path, index))
            index += 1


def _common_prefix(paths: list[tuple[int, ...]]) -> tuple[int, ...]:
    prefix = paths[0]
    for path in paths[1:]:
        n = 0
        while n < min(len(prefix), len(path)) and prefix[n] == path[n]:
            n += 1
        prefix = prefix[:n]
    return prefix


def _content_key(tensor: onnx.TensorProto) -> str:
    nameless = onnx.TensorProto()
    nameless.CopyFrom(tensor)
    nameless.name = ""
    nameless.doc_string = ""
    return hashlib.sha256(nameless.SerializeToString(deterministic=True)).hexdigest()


def _drop(graph: onnx.GraphProto, name: str) -> None:
    kept = [i for i in graph.initializer if i.name != name]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    info = [v for v in graph.value_info if v.name != name]
    del graph.value_info[:]
    graph.value_info.extend(info)


def _rename_reads(graph: onnx.GraphProto, renamed: dict[str, str]) -> None:
    for node in graph.node:
        node.input[:] = [renamed.get(name, name) for name in node.input]
        for _, sub in graphs.subgraphs(node):
            # A subgraph that defines one of the names itself reads its own value, not ours.
            local = (
                {i.name for i in sub.initializer}
                | {i.name for i in sub.input}
                | {o for n in sub.node for o in n.output}
            )
            inner = {old: new for old, new in renamed.items() if old not in local}
            if inner:
                _rename_reads(sub, inner)
