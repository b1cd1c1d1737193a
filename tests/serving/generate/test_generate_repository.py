"""The repository's decoders served for generation (serving/generate/registry.py RepositoryModels), through the
real app: a model's default variant when none is named, a variant as Triton's version or OpenAI's
"NAME:VARIANT", a 404 naming what is served for a variant that is not, and a setting's folder of the same name
first."""

from __future__ import annotations

import pytest

from fixtures.tiny_decoder import tiny_decoder_repository
from onnxport.accuracy import budgets
from onnxport.serving.app import create_app

pytestmark = pytest.mark.usefixtures("clean_environment")
STRICT = budgets.GenerationBudget(top1_min=1.01, nll_change_max=1.0, why="nothing but fp32 passes")
HELLO = {"text_input": "Hello", "parameters": {"max_tokens": 4}}


@pytest.fixture(scope="module")
def repository(tmp_path_factory, tiny_decoder):
    """The tiny decoder in a repository: fp32 served, int8-weights and int4 over a budget nothing meets."""
    return tiny_decoder_repository(tmp_path_factory.mktemp("served"), tiny_decoder, STRICT)


def client(repository, **settings):
    config = {"repository": repository.root, "fleet_db": ":memory:", "request_log": "off", **settings}
    return create_app(config).test_client()


def test_the_default_variant_answers_a_request_naming_the_model(repository):
    app = client(repository)
    answer = app.post("/v2/models/tiny/generate", json=HELLO)
    assert answer.status_code == 200, answer.json
    assert (answer.json["model_name"], answer.json["model_version"]) == ("tiny", "fp32")
    named = app.post("/v2/models/tiny/versions/fp32/generate", json=HELLO).json
    assert named["text_output"] == answer.json["text_output"]
    completion = app.post("/v1/completions", json={"model": "tiny:fp32", "prompt": "Hello", "max_tokens": 3})
    assert completion.status_code == 200 and completion.json["usage"]["completion_tokens"] == 3
    assert app.post("/v1/completions", json={"model": "tiny", "prompt": "Hello", "max_tokens": 3}).status_code == 200
    assert [m["id"] for m in app.get("/v1/models").json["data"]] == ["tiny"]


@pytest.mark.parametrize(
    ("ask", "words"),
    [
        ({"model": "tiny:int4"}, "'tiny' has no served variant 'int4' (over budget: top-1 agreement"),
        ({"model": "tiny:nope"}, "'tiny' has no served variant 'nope'; served: fp32"),
        ({"model": "other"}, "no generation model 'other'; served: tiny"),
    ],
    ids=["over-budget", "unknown-variant", "unknown-model"],
)
def test_a_variant_not_served_is_a_404_naming_what_is(repository, ask, words):
    response = client(repository).post("/v1/completions", json={**ask, "prompt": "Hello", "max_tokens": 2})
    assert response.status_code == 404 and words in response.json["error"]["message"]


def test_a_settings_folder_of_the_same_name_comes_first(repository, tiny_decoder):
    app = client(repository, generation_models={"tiny": str(tiny_decoder)})
    assert app.post("/v2/models/tiny/generate", json=HELLO).json["model_version"] == "1"


def test_triton_statistics_name_the_variant_served(repository):
    app = client(repository)
    app.post("/v2/models/tiny/generate", json=HELLO)
    (entry,) = app.get("/v2/models/tiny/stats").json["model_stats"]
    assert (entry["name"], entry["version"], entry["execution_count"]) == ("tiny", "fp32", 1)
    assert app.get("/v2/models/tiny/versions/int4/stats").status_code == 404


def test_triton_repository_index_lists_each_variant_loaded_once_it_generated(repository):
    app = client(repository)

    def rows() -> dict:
        index = app.post("/v2/repository/index")
        assert index.status_code == 200, index.json
        return {(r["name"], r["version"]): (r["state"], r["reason"]) for r in index.json if r["name"] == "tiny"}

    before = rows()
    assert set(before) == {("tiny", "fp32"), ("tiny", "int8-weights"), ("tiny", "int4")}
    assert before[("tiny", "fp32")] == ("UNAVAILABLE", "not loaded: its session is created by the first generation")
    state, reason = before[("tiny", "int4")]
    assert state == "UNAVAILABLE" and reason.startswith("not served: rejected: top-1 agreement"), reason
    app.post("/v2/models/tiny/generate", json=HELLO)
    assert rows()[("tiny", "fp32")] == ("READY", "")
