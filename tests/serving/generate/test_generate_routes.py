"""The generation routes through the real app (Flask's test client) on the tiny decoder: Triton's generate and
generate_stream, OpenAI's completions, chat and models, every budget's 4xx, and the metrics of /metrics."""

from __future__ import annotations

import json
import re

import pytest

from onnxport.serving.app import create_app

pytestmark = pytest.mark.usefixtures("clean_environment")

HELLO = {"text_input": "Hello", "parameters": {"max_tokens": 6}}


def make_app(tmp_path, folder, **settings):
    config = {
        "repository": tmp_path / "repository",
        "fleet_db": ":memory:",
        "request_log": "off",
        "generation_models": {"tiny": str(folder)},
        **settings,
    }
    return create_app(config)


@pytest.fixture
def client(tmp_path, tiny_decoder):
    return make_app(tmp_path, tiny_decoder).test_client()


def events(response) -> list:
    """The JSON of each `data:` event of a Server-Sent Events body (OpenAI's [DONE] as the string)."""
    text = response.get_data(as_text=True)
    assert text.endswith("\n\n"), "each event ends with a blank line"
    found = []
    for block in text.split("\n\n")[:-1]:
        assert block.startswith("data: "), block
        data = block[len("data: ") :]
        found.append(data if data == "[DONE]" else json.loads(data))
    return found


def metric(client, name: str, labels: str = "") -> float:
    text = client.get("/metrics").get_data(as_text=True)
    match = re.search(rf"^{re.escape(name)}{re.escape(labels)} (\S+)$", text, re.MULTILINE)
    return float(match[1]) if match else 0.0


def test_generate_answers_the_whole_text(client):
    response = client.post("/v2/models/tiny/generate", json=HELLO)
    assert response.status_code == 200, response.json
    answer = response.json
    assert (answer["model_name"], answer["model_version"], answer["finish_reason"]) == ("tiny", "1", "length")
    assert answer["generated_tokens"] == 6 and answer["prompt_tokens"] >= 1 and answer["text_output"]
    again = client.post("/v2/models/tiny/versions/1/generate", json=HELLO).json
    assert again["text_output"] == answer["text_output"], "greedy is repeatable"


def test_generate_stream_sends_an_event_per_token_then_the_finish(client):
    whole = client.post("/v2/models/tiny/generate", json=HELLO).json
    response = client.post("/v2/models/tiny/generate_stream", json=HELLO)
    assert response.status_code == 200 and response.mimetype == "text/event-stream"
    found = events(response)
    tokens, last = found[:-1], found[-1]
    assert len(tokens) == 6 and all(set(e) == {"model_name", "model_version", "text_output"} for e in tokens)
    assert "".join(e["text_output"] for e in tokens) == whole["text_output"]
    assert last["finish_reason"] == "length" and last["generated_tokens"] == 6


def test_a_seed_makes_sampling_repeatable(client):
    asked = {"text_input": "Once", "parameters": {"max_tokens": 8, "temperature": 1.5, "top_k": 50, "seed": 7}}
    first = client.post("/v2/models/tiny/generate", json=asked).json["text_output"]
    assert client.post("/v2/models/tiny/generate", json=asked).json["text_output"] == first


def test_openai_completion_and_chat_with_usage(client):
    completion = client.post("/v1/completions", json={"model": "tiny", "prompt": "Hello", "max_tokens": 5}).json
    assert completion["object"] == "text_completion" and completion["choices"][0]["finish_reason"] == "length"
    assert completion["usage"]["completion_tokens"] == 5
    assert completion["usage"]["total_tokens"] == completion["usage"]["prompt_tokens"] + 5
    messages = [{"role": "user", "content": "Hi"}]
    chat = client.post("/v1/chat/completions", json={"model": "tiny", "messages": messages, "max_tokens": 4}).json
    assert chat["object"] == "chat.completion" and chat["choices"][0]["message"]["role"] == "assistant"
    assert chat["usage"]["completion_tokens"] == 4
    assert chat["usage"]["prompt_tokens"] > 10, "the chat template wraps the message"


def test_openai_streams_end_with_done(client):
    asked = {"model": "tiny", "prompt": "Hello", "max_tokens": 3, "stream": True}
    found = events(client.post("/v1/completions", json={**asked, "stream_options": {"include_usage": True}}))
    assert found[-1] == "[DONE]"
    assert [c["choices"][0]["finish_reason"] for c in found[:4]] == [None, None, None, "length"]
    assert found[-2]["choices"] == [] and found[-2]["usage"]["completion_tokens"] == 3
    chat = {"model": "tiny", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2, "stream": True}
    chunks = events(client.post("/v1/chat/completions", json=chat))
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert chunks[-2]["choices"][0]["finish_reason"] == "length" and chunks[-1] == "[DONE]"
    assert all(c["object"] == "chat.completion.chunk" for c in chunks[:-1])


def test_models_lists_the_generation_models(client):
    listed = client.get("/v1/models").json
    assert listed["object"] == "list" and [m["id"] for m in listed["data"]] == ["tiny"]
    assert "generate" in client.get("/v2").json["extensions"]


def test_a_stop_string_ends_the_generation_and_is_left_out(client):
    whole = client.post("/v2/models/tiny/generate", json={"text_input": "Hello", "parameters": {"max_tokens": 8}})
    text = whole.json["text_output"]
    stop = text[len(text) // 2 : len(text) // 2 + 3]
    asked = {"text_input": "Hello", "parameters": {"max_tokens": 8, "stop": [stop]}}
    stopped = client.post("/v2/models/tiny/generate", json=asked).json
    assert stopped["finish_reason"] == "stop" and stop not in stopped["text_output"]
    assert text.startswith(stopped["text_output"])


@pytest.mark.parametrize("path", ["/v2/models/nope/generate", "/v2/models/nope/generate_stream"])
def test_an_unknown_model_is_a_404(client, path):
    response = client.post(path, json=HELLO)
    assert response.status_code == 404 and "nope" in response.json["error"] and "tiny" in response.json["error"]
    assert client.post("/v2/models/tiny/versions/9/generate", json=HELLO).status_code == 404


def test_an_unknown_model_is_a_404_in_openai_shape(client):
    response = client.post("/v1/completions", json={"model": "nope", "prompt": "x"})
    assert response.status_code == 404
    assert response.json["error"]["code"] == "model_not_found" and "nope" in response.json["error"]["message"]


@pytest.mark.parametrize(
    "path, value, field",
    [
        ("/v2/models/tiny/generate", {"text_input": 1}, "text_input"),
        ("/v2/models/tiny/generate_stream", {"text_input": "x", "parameters": {"top_p": 2}}, "parameters.top_p"),
        ("/v1/completions", {"model": "tiny", "prompt": "x", "n": 3}, "n"),
        ("/v1/completions", {"model": "tiny", "prompt": [999999]}, "prompt"),
        ("/v1/chat/completions", {"model": "tiny", "messages": [{"role": "robot", "content": "x"}]}, "messages"),
    ],
)
def test_a_wrong_field_is_a_400_naming_it(client, path, value, field):
    response = client.post(path, json=value)
    assert response.status_code == 400
    error = response.json["error"]
    message = error if isinstance(error, str) else error["message"]
    assert f"'{field}" in message, message


def test_malformed_json_is_a_400(client):
    response = client.post("/v1/completions", data=b"{", content_type="application/json")
    assert response.status_code == 400 and "not JSON" in response.json["error"]["message"]
    response = client.post("/v2/models/tiny/generate", data=b"{", content_type="application/json")
    assert response.status_code == 400 and "not JSON" in response.json["error"]


def test_max_new_tokens_budget_is_a_400_naming_it(tmp_path, tiny_decoder):
    client = make_app(tmp_path, tiny_decoder, generation_max_new_tokens=8).test_client()
    response = client.post("/v2/models/tiny/generate", json={"text_input": "x", "parameters": {"max_tokens": 9}})
    assert response.status_code == 400
    assert response.json["error"] == "max_tokens 9 is over the server's generation_max_new_tokens (8)"
    unasked = client.post("/v1/completions", json={"model": "tiny", "prompt": "Hello"}).json
    assert unasked["usage"]["completion_tokens"] == 8, "a request naming none gets the budget"


def test_max_context_budget_is_a_400_naming_it(tmp_path, tiny_decoder):
    client = make_app(tmp_path, tiny_decoder, generation_max_context=40).test_client()
    chat = {"model": "tiny", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 20}
    response = client.post("/v1/chat/completions", json=chat)
    assert response.status_code == 400
    error = response.json["error"]
    assert error["code"] == "context_length_exceeded" and "generation_max_context (40)" in error["message"]
    assert "max_tokens (20)" in error["message"]


def test_the_time_limit_ends_a_generation_with_finish_time(tmp_path, tiny_decoder):
    client = make_app(tmp_path, tiny_decoder, generation_time_limit=0.001).test_client()
    asked = {"text_input": "Hello", "parameters": {"max_tokens": 200}}
    answer = client.post("/v2/models/tiny/generate", json=asked).json
    assert answer["finish_reason"] == "time" and answer["generated_tokens"] < 200
    completion = client.post("/v1/completions", json={"model": "tiny", "prompt": "Hello", "max_tokens": 200}).json
    assert completion["choices"][0]["finish_reason"] == "length", "OpenAI's reasons are stop and length"
    assert metric(client, "onnxport_generation_requests_total", '{finish="time",model="tiny"}') == 2


def test_concurrent_generations_over_the_limit_get_a_429(tmp_path, tiny_decoder):
    client = make_app(tmp_path, tiny_decoder, generation_max_concurrent=2).test_client()
    asked = {"text_input": "Hello", "parameters": {"max_tokens": 50}}
    held = [client.post("/v2/models/tiny/generate_stream", json=asked, buffered=False) for _ in range(2)]
    try:
        assert [r.status_code for r in held] == [200, 200]
        assert metric(client, "onnxport_generations_active") == 2
        refused = client.post("/v2/models/tiny/generate", json=asked)
        assert refused.status_code == 429 and refused.headers["Retry-After"] == "1"
        assert "generation_max_concurrent" in refused.json["error"]
        openai = client.post("/v1/completions", json={"model": "tiny", "prompt": "x"})
        assert openai.status_code == 429 and openai.json["error"]["code"] == "generation_max_concurrent"
    finally:
        for response in held:
            next(iter(response.response))  # one token, then the client goes away
            response.close()
    assert metric(client, "onnxport_generations_active") == 0
    assert metric(client, "onnxport_generation_requests_total", '{finish="cancelled",model="tiny"}') == 2
    assert client.post("/v2/models/tiny/generate", json=HELLO).status_code == 200, "the slots are free again"


def test_metrics_count_tokens_and_time_to_first_token(client):
    client.post("/v2/models/tiny/generate", json=HELLO)
    assert metric(client, "onnxport_generation_tokens_total", '{kind="generated",model="tiny"}') == 6
    assert metric(client, "onnxport_generation_first_token_seconds_count", '{model="tiny"}') == 1
    assert metric(client, "onnxport_generation_tokens_per_second_count", '{model="tiny"}') == 1
    assert metric(client, "onnxport_generation_requests_total", '{finish="length",model="tiny"}') == 1
    assert metric(client, "onnxport_generations_active") == 0


def test_a_folder_that_is_no_decoder_folder_stops_the_start(tmp_path):
    from onnxport.serving.config import ConfigError

    with pytest.raises(ConfigError) as raised:
        make_app(tmp_path, tmp_path / "missing")
    assert "generation_models" in str(raised.value) and "'tiny'" in str(raised.value)


def test_a_page_elsewhere_cannot_make_the_server_generate(client):
    refused = client.post(
        "/v1/completions", json={"model": "tiny", "prompt": "x"}, headers={"Origin": "https://evil.example"}
    )
    assert refused.status_code == 403 and "cors_origins" in refused.json["error"]
    form = client.post("/v2/models/tiny/generate", data="text_input=x", content_type="text/plain")
    assert form.status_code == 415 and "application/json" in form.json["error"]


def test_a_huge_prompt_is_refused_untokenized(tmp_path, tiny_decoder):
    client = make_app(tmp_path, tiny_decoder, generation_max_context=64).test_client()
    response = client.post("/v2/models/tiny/generate", json={"text_input": "a" * (64 * 64 + 1)})
    assert response.status_code == 400 and "generation_max_context (64 tokens" in response.json["error"]


def test_triton_statistics_of_a_generation_model(client):
    client.post("/v2/models/tiny/generate", json=HELLO)
    (entry,) = client.get("/v2/models/tiny/stats").json["model_stats"]
    assert (entry["name"], entry["version"], entry["execution_count"], entry["inference_count"]) == ("tiny", "1", 1, 6)
    assert entry["inference_stats"]["success"]["count"] == 1 and entry["inference_stats"]["success"]["ns"] > 0
    assert entry["generation"]["generated_tokens"] == 6 and entry["generation"]["first_token_ns"] > 0
    assert client.get("/v2/models/tiny/versions/1/stats").status_code == 200
    assert client.get("/v2/models/tiny/versions/2/stats").status_code == 404
