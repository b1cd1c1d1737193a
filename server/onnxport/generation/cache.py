"""A decoder file's key/value cache: which inputs take the past and which outputs give it back, found by name.

The names Hugging Face Optimum, Transformers.js and ONNX Runtime GenAI's builder write are
`past_key_values.{i}.key` -> `present.{i}.key` (and `.value`); onnxruntime's own LLaMA export and several
hand-made files write `past_key_{i}` -> `present_key_{i}`. A present's name is the past's with "past" (or
"past_key_values") made "present", so both families, and `past_key.{i}` -> `present_key.{i}`, are read by
one rule. A file whose names follow no such rule declares its pairs (past name -> present name, in layer
order, key before value). The layout is [batch, kv heads, sequence, head dim] (docs: the decoder convention).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Protocol, Sequence

import onnx

from onnxport.dtypes import DTYPES
from onnxport.errors import ModelFileError

# past_key_values.0.key, past.0.value, past_key_0, past_value.3
PAST_NAME = re.compile(
    r"^past(?:_key_values)?[._](?:(?P<layer>\d+)[._](?P<kind>key|value)|(?P<kind2>key|value)[._](?P<layer2>\d+))$"
)
# What the decoder session feeds besides the cache; another required input is one it cannot feed.
FED_INPUTS = ("input_ids", "attention_mask", "position_ids")
FIRST_PAST = "past_key_values.0.key"
_ELEMENT_BY_ORT = {d.ort: d.numpy for d in DTYPES}
_ELEMENT_BY_ONNX = {d.onnx_number: d.numpy for d in DTYPES}
FLOAT_ELEMENTS = ("float32", "float16")

Dim = int | str | None


@dataclass(frozen=True)
class Port:
    """An input or output as the signature reads it: its name, its dimensions (int, symbol or None), its
    element type by numpy's name."""

    name: str
    shape: tuple[Dim, ...]
    element: str


@dataclass(frozen=True)
class LayerCache:
    """One layer's cache: (past input, present output) for the keys and for the values."""

    key: tuple[str, str]
    value: tuple[str, str]


@dataclass(frozen=True)
class CacheSignature:
    layers: tuple[LayerCache, ...]
    kv_heads: int
    head_dim: int
    element: str  # numpy's name of the cache tensors' type: float32, float16
    has_position_ids: bool
    has_attention_mask: bool = True
    logits: str = "logits"

    @property
    def pairs(self) -> tuple[tuple[str, str], ...]:
        """Every (past, present) pair, layer by layer, key before value."""
        return tuple(pair for layer in self.layers for pair in (layer.key, layer.value))


class _NodeArg(Protocol):
    """onnxruntime's NodeArg, as session.get_inputs() gives it."""

    @property
    def name(self) -> str: ...
    @property
    def shape(self) -> Sequence[Dim]: ...
    @property
    def type(self) -> str: ...


def port(item: _NodeArg | onnx.ValueInfoProto) -> Port:
    """A Port from onnxruntime's NodeArg or an ONNX graph's ValueInfoProto."""
    if isinstance(item, onnx.ValueInfoProto):
        tensor = item.type.tensor_type
        dims: tuple[Dim, ...] = tuple(
            d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor.shape.dim
        )
        return Port(item.name, dims, _ELEMENT_BY_ONNX.get(tensor.elem_type, str(tensor.elem_type)))
    return Port(item.name, tuple(item.shape or ()), _ELEMENT_BY_ORT.get(item.type, item.type))


def read_signature(
    inputs: Iterable[_NodeArg | onnx.ValueInfoProto],
    outputs: Iterable[_NodeArg | onnx.ValueInfoProto],
    *,
    declared: Mapping[str, str] | None = None,
    label: str = "model.onnx",
) -> CacheSignature:
    """The cache of a decoder with these inputs and outputs; a ModelFileError naming what is missing otherwise.

    declared: past input name -> present output name, in layer order, key before value; it replaces the search
    by name.
    """
    ins = {p.name: p for p in map(port, inputs)}
    outs = {p.name: p for p in map(port, outputs)}
    in_names, out_names = ", ".join(ins), ", ".join(outs)
    for needed in ("input_ids",):
        if needed not in ins:
            raise ModelFileError(f"{label} is not a decoder: no input named {needed} (inputs: {in_names})")
    if "logits" not in outs:
        raise ModelFileError(f"{label} is not a decoder: no output named logits (outputs: {out_names})")
    pairs = _declared_pairs(declared, ins, outs, label) if declared is not None else _pairs_by_name(ins, outs, label)
    unfed = [n for n in ins if n not in FED_INPUTS and n not in {past for past, _ in pairs}]
    if unfed:
        raise ModelFileError(
            f"{label} has inputs a decoder step cannot feed: {', '.join(unfed)} (it feeds {', '.join(FED_INPUTS)} "
            "and the past key/value cache)"
        )
    heads, head_dim, element = _layout(pairs, ins, outs, label)
    layers = tuple(LayerCache(pairs[i], pairs[i + 1]) for i in range(0, len(pairs), 2))
    return CacheSignature(layers, heads, head_dim, element, "position_ids" in ins, "attention_mask" in ins)


def signature_of_model(
    model: onnx.ModelProto, *, declared: Mapping[str, str] | None = None, label: str = "model.onnx"
) -> CacheSignature:
    """read_signature over an ONNX model's graph (no session needed)."""
    initializers = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in initializers]
    return read_signature(inputs, model.graph.output, declared=declared, label=label)


def present_candidates(past: str) -> tuple[str, ...]:
    """The output names that may give back this past input, most common first."""
    return tuple(dict.fromkeys([past.replace("past_key_values", "present", 1), past.replace("past", "present", 1)]))


def _pairs_by_name(ins: Mapping[str, Port], outs: Mapping[str, Port], label: str) -> list[tuple[str, str]]:
    found: dict[tuple[int, str], str] = {}
    for name in ins:
        match = PAST_NAME.match(name)
        if match:
            layer = int(match["layer"] if match["layer"] is not None else match["layer2"])
            found[(layer, match["kind"] or match["kind2"])] = name
    if not found:
        raise ModelFileError(
            f"{label} has no key/value cache: no input named {FIRST_PAST} or past_key_0 (inputs: {', '.join(ins)})"
        )
    layers = 1 + max(layer for layer, _ in found)
    pairs = []
    for layer in range(layers):
        for kind in ("key", "value"):
            if (layer, kind) not in found:
                seen = ", ".join(sorted(found.values()))
                raise ModelFileError(f"{label} has no {kind} cache input for layer {layer} (past inputs: {seen})")
            past = found[(layer, kind)]
            present = next((c for c in present_candidates(past) if c in outs), None)
            if present is None:
                expected = " or ".join(present_candidates(past))
                raise ModelFileError(
                    f"{label}: input {past} has no present output: expected {expected} (outputs: {', '.join(outs)})"
                )
            pairs.append((past, present))
    return pairs


def _declared_pairs(
    declared: Mapping[str, str], ins: Mapping[str, Port], outs: Mapping[str, Port], label: str
) -> list[tuple[str, str]]:
    pairs = list(declared.items())
    if not pairs or len(pairs) % 2:
        raise ModelFileError(
            f"{label}: the declared cache needs a key and a value pair per layer, got {len(pairs)} pairs"
        )
    for past, present in pairs:
        if past not in ins:
            raise ModelFileError(f"{label}: declared cache input {past} is not an input (inputs: {', '.join(ins)})")
        if present not in outs:
            raise ModelFileError(
                f"{label}: declared cache output {present} is not an output (outputs: {', '.join(outs)})"
            )
    return pairs


def _layout(
    pairs: Sequence[tuple[str, str]], ins: Mapping[str, Port], outs: Mapping[str, Port], label: str
) -> tuple[int, int, str]:
    """kv heads, head dim and element type, the same in every past and present; an error naming the first that
    differs or is not [batch, kv heads, sequence, head dim] with fixed heads and head dim."""
    expected: tuple[Dim, Dim, str] | None = None
    first = ""
    for past, present in pairs:
        for p in (ins[past], outs[present]):
            if len(p.shape) != 4:
                raise ModelFileError(
                    f"{label}: cache tensor {p.name} has shape {list(p.shape)}, expected 4 dimensions "
                    "[batch, kv heads, sequence, head dim]"
                )
            if p.element not in FLOAT_ELEMENTS:
                raise ModelFileError(f"{label}: cache tensor {p.name} is {p.element}, expected float32 or float16")
            this = (p.shape[1], p.shape[3], p.element)
            if expected is None:
                expected = this
                first = p.name
            elif this != expected:
                raise ModelFileError(
                    f"{label}: cache tensor {p.name} has kv heads, head dim, type {_words(this)}; "
                    f"{first} has {_words(expected)}"
                )
    assert expected is not None
    heads, head_dim, element = expected
    if not isinstance(heads, int) or not isinstance(head_dim, int):
        raise ModelFileError(
            f"{label}: cache tensor {first} has no fixed kv heads and head dim (shape {list(ins[pairs[0][0]].shape)}),"
            " needed to start an empty cache"
        )
    return heads, head_dim, element


def _words(layout: tuple[Dim, Dim, str]) -> str:
    return f"{layout[0]}, {layout[1]}, {layout[2]}"
