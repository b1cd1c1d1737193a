"""The raw-input kinds are one table (pipelines/kinds.py): the spec's keys, the server's raw inputs and the
browser library's pipeline spec all name the same kinds."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from onnxport.pipelines import kinds, spec, spec_check
from onnxport.pipelines.raw import Limits, OverLimit, RawInputError

PIPELINE_JS = Path(__file__).resolve().parents[2] / "web" / "lib" / "pipelines" / "pipeline.js"
LIMITS = Limits(rows=2, text_bytes=100, image_pixels=100, request_pixels=100)


def test_every_kind_is_a_key_of_the_spec_and_of_the_browsers_spec():
    assert set(kinds.KINDS) == set(spec.PipelineSpec.__annotations__) - {"answer"}
    typedef = re.search(r"@typedef \{\{([^}]*)\}\} PipelineSpec", PIPELINE_JS.read_text(encoding="utf-8"))
    assert typedef, "web/lib/pipelines/pipeline.js declares no PipelineSpec"
    js_keys = {part.split(":")[0].strip().rstrip("?") for part in typedef.group(1).split(",")}
    assert js_keys - {"answer"} == set(kinds.KINDS)


def test_a_spec_with_no_kind_or_two_is_refused_naming_every_kind():
    answer = {"output": "out", "steps": []}
    with pytest.raises(spec.SpecError, match="exactly one of `text` and `image`"):
        spec_check.validate({"answer": answer}, "recipe 'toy'")


@pytest.mark.parametrize("name", sorted(kinds.KINDS))
def test_each_kind_refuses_rows_over_the_limit_and_a_batch_of_none(name):
    kind = kinds.KINDS[name]
    with pytest.raises(OverLimit, match="setting raw_max_rows"):
        kind.feeds({"pair": False}, np.array([b"a", b"b", b"c"], dtype=object), LIMITS, Path)
    with pytest.raises(RawInputError, match="send at least one row"):
        kind.feeds({"pair": False}, np.array([], dtype=object), LIMITS, Path)
