"""Triton's generate extension: `POST /v2/models/{m}[/versions/{v}]/generate` and `generate_stream`.

The request is `{"text_input": "...", "parameters": {"max_tokens": 32, "temperature": 0, ...}}`; the sampling
parameters may also stand beside text_input, as Triton's own examples send them (not both places at once).
/generate answers one JSON object, /generate_stream Server-Sent Events: one `data: {...}` per token with
its `text_output`, then one whose `finish_reason` says why it ended (stop, length, time) with the counts.
"""

from __future__ import annotations

from onnxport.json_boundary import JsonObject
from onnxport.serving.generate import fields
from onnxport.serving.generate.ask import SAMPLING, Ask, knobs
from onnxport.serving.generate.failures import GenerateError

# Triton clients put "stream" among the parameters; the route decides, so it is read and set aside.
PARAMETERS = (*SAMPLING, "stream")
FIELDS = ("text_input", "parameters", *PARAMETERS)


def read(model: str, version: str | None, body: bytes, stream: bool) -> Ask:
    obj = fields.json_object(body)
    fields.only_known(obj, FIELDS)
    prompt = fields.text(obj, "text_input")
    parameters = obj.get("parameters")
    if parameters is None:
        parameters = {}
    if not isinstance(parameters, dict):
        raise fields.bad_field("parameters", "an object of sampling parameters", parameters)
    fields.only_known(parameters, PARAMETERS, "parameters.")
    both = sorted(set(parameters) & set(obj))
    if both:
        raise GenerateError(
            400, f"field {both[0]!r} is both in parameters and beside text_input; send it once", param=both[0]
        )
    beside = {k: v for k, v in obj.items() if k in PARAMETERS}
    fields.boolean(parameters, "stream", stream, "parameters.")
    fields.boolean(beside, "stream", stream)
    knobs(beside)  # each place checked apart, so that a refusal names the field where it came
    knobs(parameters, "parameters.")
    return Ask(
        model,
        version,
        prompt=prompt,
        knobs=knobs({**beside, **parameters}),
        stream=stream,
        prompt_field="text_input",
    )


def answer(model: str, version: str, text: str, finish: str, prompt_tokens: int, generated: int) -> JsonObject:
    return {
        "model_name": model,
        "model_version": version,
        "text_output": text,
        "finish_reason": finish,
        "prompt_tokens": prompt_tokens,
        "generated_tokens": generated,
    }


def token_event(model: str, version: str, text: str) -> JsonObject:
    return {"model_name": model, "model_version": version, "text_output": text}


def error_event(message: str) -> JsonObject:
    """A failure after the 200 and the first events went out: Triton's streams say it as an error event."""
    return {"error": message}
