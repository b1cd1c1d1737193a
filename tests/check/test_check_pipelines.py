"""The check's pipeline rows (server/onnxport/check/preprocessing.py) against a real server and Chromium: minilm's
and digits' pipelines agree between the browser and Python on the raw-input corpus, end to end too; and a
browser that reads another spec (truncation at 128 instead of 256) fails the row, naming the text and the
first differing position."""

from __future__ import annotations

import json
import urllib.request

from onnxport.check import preprocessing


def test_the_demo_pipelines_pass_in_the_browser_and_in_python(chromium, live_server):
    manifest = json.loads(urllib.request.urlopen(f"{live_server}/api/manifest").read())
    rows = preprocessing.pipeline_rows(chromium, live_server, manifest, ["iris", "minilm", "digits"])
    keys = [(r["model"], r["runtime"]) for r in rows]
    assert keys == [
        ("minilm", "preprocessing"),
        ("minilm", "answers"),
        ("digits", "preprocessing"),
        ("digits", "answers"),
    ]  # iris has no pipeline
    for row in rows:
        assert row["status"] == "pass", row
    assert rows[0]["inputs"] == 22 and "input_ids, attention_mask equal" in rows[0]["reason"]
    assert rows[2]["inputs"] == 10 and "at most 0 level(s) apart" in rows[2]["reason"]


def test_a_browser_that_truncates_elsewhere_fails_naming_the_text_and_position(chromium, live_server):
    manifest = json.loads(urllib.request.urlopen(f"{live_server}/api/manifest").read())
    context = chromium.new_context()

    def other_spec(route):  # the browser alone reads a manifest whose minilm truncates at 128
        served = json.loads(route.fetch().text())
        served["models"]["minilm"]["pipeline"]["text"]["max_length"] = 128
        route.fulfill(json=served)

    context.route("**/api/manifest", other_spec)
    try:
        rows = preprocessing.pipeline_rows(context, live_server, manifest, ["minilm"])
    finally:
        context.close()
    [preprocessed, answered] = rows
    assert preprocessed["status"] == "fail", preprocessed
    assert preprocessed["reason"].startswith("text 'past max length'"), preprocessed["reason"]
    assert "input_ids differs first at position 127: browser [102]" in preprocessed["reason"]
    assert "(lengths 128 and 256)" in preprocessed["reason"]
    assert answered["status"] == "fail" and "cosine" in answered["reason"], answered
