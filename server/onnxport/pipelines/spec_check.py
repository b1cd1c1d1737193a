"""A pipeline spec checked: against its types (spec.py) and exactly one kind of the kinds' table (kinds.py), then
against the model it is for (its inputs, outputs and assets). The first key that is wrong is named in a SpecError.

Apart from spec.py, the base the kinds' modules import: this check imports the kinds, and none of them imports it.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter, ValidationError

from onnxport.pipelines import kinds
from onnxport.pipelines.spec import PipelineSpec, SpecError

_ADAPTER: TypeAdapter[PipelineSpec] = TypeAdapter(PipelineSpec)


def validate(spec: Any, where: str) -> PipelineSpec:
    """spec checked against the types alone; SpecError names the first wrong key. where: the spec's source."""
    try:
        checked = _ADAPTER.validate_python(spec)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"]) or "(the spec)"
        got = repr(first.get("input"))
        got = got if len(got) <= 80 else got[:77] + "..."
        raise SpecError(f"{where}: pipeline.{key}: {first['msg']} (got {got})") from None
    if sum(name in checked for name in kinds.KINDS) != 1:
        raise SpecError(f"{where}: a pipeline has exactly one of {' and '.join(f'`{name}`' for name in kinds.KINDS)}")
    return checked


def check(spec: Any, where: str, inputs: list[str], outputs: list[str], assets: list[str]) -> PipelineSpec:
    """spec validated against the types and against the model it is for (its inputs, outputs and assets)."""
    checked = validate(spec, where)
    kind = kinds.of(dict(checked))
    named = {"answer.output": checked["answer"]["output"], **kind.check_spec(checked[kind.name], where, assets)}  # type: ignore[literal-required]
    for key, name in named.items():
        known = outputs if key == "answer.output" else inputs
        if name not in known:
            raise SpecError(
                f"{where}: pipeline.{key} {name!r} is not one of the model's "
                f"{'outputs' if key == 'answer.output' else 'inputs'} ({', '.join(known)})"
            )
    for index, step in enumerate(checked["answer"]["steps"]):
        if step["op"] == "ctc" and "vocabulary" not in step:
            raise SpecError(f"{where}: pipeline.answer.steps.{index}: ctc needs a `vocabulary`")
        if step["op"] == "mean_pool":
            if index != 0:
                raise SpecError(f"{where}: pipeline.answer.steps.{index}: mean_pool comes first (it reads tokens)")
            if step.get("mask") not in inputs:
                raise SpecError(
                    f"{where}: pipeline.answer.steps.{index}.mask {step.get('mask')!r} is not one of the "
                    f"model's inputs ({', '.join(inputs)})"
                )
    return checked
