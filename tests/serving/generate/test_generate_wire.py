"""Reading generation requests without a model (serving/generate/): Triton's generate body, OpenAI's completion
and chat bodies, and the budgets' refusals, each a 4xx that names the field or the limit and what came."""

from __future__ import annotations

import json

import pytest

from onnxport.serving.generate import openai_wire, triton_wire
from onnxport.serving.generate.ask import Knobs
from onnxport.serving.generate.budgets import Budgets, Slots
from onnxport.serving.generate.failures import GenerateError


def body(value: object) -> bytes:
    return json.dumps(value).encode()


def refusal(read, value: object) -> GenerateError:
    with pytest.raises(GenerateError) as raised:
        read(value if isinstance(value, bytes) else body(value))
    assert raised.value.status == 400
    return raised.value


def triton(value):
    return triton_wire.read("tiny", None, value if isinstance(value, bytes) else body(value), False)


def test_triton_parameters_in_their_object_or_beside_the_text():
    ask = triton({"text_input": "Hi", "parameters": {"max_tokens": 8, "temperature": 0.5, "top_k": 4, "stop": "x"}})
    assert ask.prompt == "Hi" and ask.knobs == Knobs(8, 0.5, 4, 1.0, None, ("x",))
    beside = triton({"text_input": "Hi", "max_tokens": 8.0, "seed": 3, "top_p": 0.9, "stop": ["a", "b"]})
    assert beside.knobs == Knobs(8, 0.0, 0, 0.9, 3, ("a", "b"))
    assert triton({"text_input": "", "parameters": {"stream": False}}).knobs == Knobs()


@pytest.mark.parametrize(
    "value, field",
    [
        ({"parameters": {}}, "text_input"),
        ({"text_input": 3}, "text_input"),
        ({"text_input": "a", "parameters": {"max_tokens": 0}}, "parameters.max_tokens"),
        ({"text_input": "a", "parameters": {"max_tokens": 1.5}}, "parameters.max_tokens"),
        ({"text_input": "a", "parameters": {"max_tokens": True}}, "parameters.max_tokens"),
        ({"text_input": "a", "parameters": {"temperature": 2.5}}, "parameters.temperature"),
        ({"text_input": "a", "parameters": {"top_p": -0.1}}, "parameters.top_p"),
        ({"text_input": "a", "parameters": {"top_p": 0}}, "parameters.top_p"),
        ({"text_input": "a", "parameters": {"top_k": -1}}, "parameters.top_k"),
        ({"text_input": "a", "parameters": {"seed": -1}}, "parameters.seed"),
        ({"text_input": "a", "parameters": {"seed": 2**63}}, "parameters.seed"),
        ({"text_input": "a", "parameters": {"stop": [""]}}, "parameters.stop"),
        ({"text_input": "a", "parameters": {"stop": ["x"] * 17}}, "parameters.stop"),
        ({"text_input": "a", "parameters": {"stream": "yes"}}, "parameters.stream"),
        ({"text_input": "a", "parameters": {"beam_width": 2}}, "parameters.beam_width"),
        ({"text_input": "a", "parameters": []}, "parameters"),
        ({"text_input": "a", "temperature": "hot"}, "temperature"),
        ({"text_input": "a", "bad_words": ""}, "bad_words"),
        ({"text_input": "a", "max_tokens": 2, "parameters": {"max_tokens": 2}}, "max_tokens"),
    ],
)
def test_triton_refusals_name_the_field(value, field):
    error = refusal(triton, value)
    assert f"'{field}'" in error.message


@pytest.mark.parametrize(
    "raw, words",
    [
        (b"{not json", "not JSON"),
        (b"[1]", "JSON object"),
        (b"\xff", "not JSON"),
        (b'{"text_input": "\\ud800"}', "'text_input': a lone surrogate"),
        (b'{"text_input": "a", "stop": ["x", "\\udfff"]}', "'stop[1]': a lone surrogate"),
        (b'{"text_input": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nests too deep"),
    ],
)
def test_a_body_that_is_no_json_object_is_a_400(raw, words):
    assert words in refusal(triton, raw).message


def test_openai_completion_prompts():
    ask = openai_wire.completion_ask(body({"model": "tiny", "prompt": "Hi", "max_tokens": 4, "stop": "\n"}))
    assert (ask.model, ask.prompt, ask.knobs.max_tokens, ask.knobs.stop, ask.stream) == (
        "tiny",
        "Hi",
        4,
        ("\n",),
        False,
    )
    assert openai_wire.completion_ask(body({"model": "m", "prompt": [1, 2, 3]})).prompt_ids == (1, 2, 3)
    assert openai_wire.completion_ask(body({"model": "m", "prompt": ["one"]})).prompt == "one"
    streamed = openai_wire.completion_ask(
        body({"model": "m", "prompt": "x", "stream": True, "stream_options": {"include_usage": True}})
    )
    assert streamed.stream and streamed.include_usage
    # What the official client may send at its neutral values is taken.
    neutral = {"n": 1, "echo": False, "logprobs": None, "frequency_penalty": 0, "presence_penalty": 0.0, "user": "u"}
    assert openai_wire.completion_ask(body({"model": "m", "prompt": "x", **neutral})).prompt == "x"


def completion(value):
    return openai_wire.completion_ask(value)


@pytest.mark.parametrize(
    "value, field",
    [
        ({"prompt": "x"}, "model"),
        ({"model": "", "prompt": "x"}, "model"),
        ({"model": "m"}, "prompt"),
        ({"model": "m", "prompt": ["a", "b"]}, "prompt"),
        ({"model": "m", "prompt": [-1]}, "prompt"),
        ({"model": "m", "prompt": []}, "prompt"),
        ({"model": "m", "prompt": "x", "n": 2}, "n"),
        ({"model": "m", "prompt": "x", "echo": True}, "echo"),
        ({"model": "m", "prompt": "x", "logprobs": 3}, "logprobs"),
        ({"model": "m", "prompt": "x", "presence_penalty": 0.5}, "presence_penalty"),
        ({"model": "m", "prompt": "x", "user": 7}, "user"),
        ({"model": "m", "prompt": "x", "stream_options": {"include_usage": True}}, "stream_options"),
        ({"model": "m", "prompt": "x", "stream": True, "stream_options": {"colour": 1}}, "stream_options.colour"),
        ({"model": "m", "prompt": "x", "functions": []}, "functions"),
        ({"model": "m", "prompt": "x", "temperature": -1}, "temperature"),
    ],
)
def test_openai_completion_refusals_name_the_field(value, field):
    error = refusal(completion, value)
    assert f"'{field}'" in error.message and error.param == field
    assert openai_wire.error(error)["error"]["param"] == field


def chat(value):
    return openai_wire.chat_ask(value)


def test_openai_chat_messages():
    ask = chat(
        body(
            {
                "model": "tiny",
                "messages": [
                    {"role": "developer", "content": "Be brief."},
                    {"role": "user", "content": [{"type": "text", "text": "Hi "}, {"type": "text", "text": "there"}]},
                ],
                "max_completion_tokens": 5,
            }
        )
    )
    assert ask.messages == ({"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi there"})
    assert ask.knobs.max_tokens == 5


@pytest.mark.parametrize(
    "value, field",
    [
        ({"model": "m", "messages": []}, "messages"),
        ({"model": "m", "messages": "hi"}, "messages"),
        ({"model": "m", "messages": [{"role": "tool", "content": "x"}]}, "messages[0].role"),
        ({"model": "m", "messages": [{"role": "user"}]}, "messages[0].content"),
        ({"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, "messages[0].content"),
        ({"model": "m", "messages": [{"role": "user", "content": "x", "tool_calls": []}]}, "messages[0].tool_calls"),
        (
            {"model": "m", "messages": [{"role": "user", "content": "x"}], "max_completion_tokens": 0},
            "max_completion_tokens",
        ),
    ],
)
def test_openai_chat_refusals_name_the_field(value, field):
    assert f"'{field}'" in refusal(chat, value).message


BUDGETS = Budgets(max_new_tokens=256, max_context=2048, max_concurrent=2, seconds=60.0)


def test_max_new_tokens_budget_names_the_limit_and_the_value():
    with pytest.raises(GenerateError) as raised:
        BUDGETS.new_tokens(300, 10)
    assert raised.value.status == 400
    assert "max_tokens 300" in raised.value.message and "generation_max_new_tokens (256)" in raised.value.message


def test_max_context_budget_names_the_limit_and_the_counts():
    with pytest.raises(GenerateError) as raised:
        BUDGETS.new_tokens(200, 1900)
    message = raised.value.message
    assert raised.value.status == 400 and raised.value.code == "context_length_exceeded"
    assert "1900 tokens" in message and "max_tokens (200)" in message and "generation_max_context (2048)" in message
    with pytest.raises(GenerateError) as full:
        BUDGETS.new_tokens(None, 2048)
    assert "2048 tokens" in full.value.message and "generation_max_context (2048" in full.value.message


def test_without_max_tokens_a_request_gets_what_the_budgets_leave():
    assert BUDGETS.new_tokens(None, 10) == 256
    assert BUDGETS.new_tokens(None, 2000) == 48
    assert BUDGETS.new_tokens(48, 2000) == 48


def test_slots_refuse_one_more_with_a_429_naming_the_limit():
    slots = Slots(2)
    slots.take()
    slots.take()
    with pytest.raises(GenerateError) as raised:
        slots.take()
    assert raised.value.status == 429 and "generation_max_concurrent" in raised.value.message
    assert "2 generations" in raised.value.message
    slots.give_back()
    slots.take()  # a slot given back is taken again


@pytest.mark.parametrize("field, value", [("n", True), ("echo", 0), ("logprobs", 0), ("top_logprobs", False)])
def test_neutral_values_are_json_values_not_python_equals(field, value):
    """true is not 1 and 0 is not false in JSON, as the OpenAPI document's enums say."""
    assert f"'{field}'" in refusal(completion, {"model": "m", "prompt": "x", field: value}).message


def test_a_prompt_far_too_long_is_refused_before_it_is_tokenized():
    budgets = Budgets(max_new_tokens=8, max_context=16, max_concurrent=1, seconds=1.0)
    budgets.before_tokenizing(16 * 64, "prompt")
    with pytest.raises(GenerateError) as raised:
        budgets.before_tokenizing(16 * 64 + 1, "text_input")
    assert raised.value.param == "text_input" and "generation_max_context (16 tokens" in raised.value.message
