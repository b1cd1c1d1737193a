"""The docs describe every key the code writes: docs/manifest.md (manifest.json, bench.json) and
docs/conformance.md (the `onnxport check` report, conformance.json).

What "documented" means here: a key is documented when it appears alone in backticks (`key`) in its
file's section of the doc, the part under the top-level `# ` heading that names the file (fenced code
does not count, nor a span holding several keys). The walker lists every key path of a real file.
The keys of maps (model, variant-table, output, operator, input names...) are data, not keys: the
walk goes through them without asking for them. For the manifest, maps and free-form objects are read
off its JSON Schema (`additionalProperties`); for the other files they are listed below.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxport import cli
from onnxport.repository.schema import manifest_schema

PROJECT = Path(__file__).resolve().parents[1]
MANIFEST_DOC = PROJECT / "docs" / "manifest.md"
CONFORMANCE_DOC = PROJECT / "docs" / "conformance.md"

# (doc, a fragment of its `# ` heading) for each file the code writes.
MANIFEST = (MANIFEST_DOC, "The manifest")
BENCH = (MANIFEST_DOC, "`bench.json`")
REPORT = (CONFORMANCE_DOC, "The conformance report")
VERDICTS = (CONFORMANCE_DOC, "`conformance.json`")

# Key paths (`*` = any map key, `[]` = any list item) whose keys are names, not documented keys.
REPORT_MAPS = {"tolerances", "summary", "results[].outputs", "results[].placement.cpu_op_types",
               "results[].placement.by_provider"}
BENCH_MAPS = {"models", "models.*.inputs", "models.*.variants", "recommendations.dynamic_batching"}
# The verdicts' `browser` is the report's, whole: its keys are checked in the report.
VERDICTS_OPAQUE = {"verdicts[].browser"}


# --------------------------------------------------------------------------- the walker


def section(doc: Path, heading: str) -> str:
    """The text under the one top-level heading of doc that contains `heading`, up to the next one."""
    parts: dict[str, list[str]] = {}
    current, fenced = None, False
    for line in doc.read_text().splitlines():
        fenced ^= line.startswith("```")
        if not fenced and line.startswith("# "):
            current = line
            parts[current] = []
        elif current is not None:
            parts[current].append(line)
    found = [title for title in parts if heading in title]
    assert len(found) == 1, f"{doc.name}: {len(found)} top-level headings contain {heading!r}: {list(parts)}"
    return "\n".join(parts[found[0]])


def documented_keys(text: str) -> set[str]:
    """Every `span` outside fenced code, as written (stripped)."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return {span.strip() for span in re.findall(r"`([^`\n]+)`", prose)}


def schema_maps(schema: dict[str, Any]) -> tuple[set[str], set[str]]:
    """(maps, free-form objects) of a document described by schema, as key paths."""
    definitions = schema.get("$defs", {})
    maps: set[str] = set()
    opaque: set[str] = set()

    def visit(node: dict[str, Any], path: str) -> None:
        if "$ref" in node:
            visit(definitions[node["$ref"].rsplit("/", 1)[-1]], path)
        for branch in [*node.get("anyOf", ()), *node.get("oneOf", ())]:
            visit(branch, path)
        if "properties" in node:
            for key, sub in node["properties"].items():
                visit(sub, f"{path}.{key}" if path else key)
        elif node.get("type") == "object":
            values = node.get("additionalProperties")
            if isinstance(values, dict) and values:
                maps.add(path)
                visit(values, f"{path}.*")
            else:
                opaque.add(path)
        if node.get("type") == "array" and isinstance(node.get("items"), dict):
            visit(node["items"], f"{path}[]")

    visit(schema, "")
    return maps, opaque


def key_paths(document: Any, maps: set[str], opaque: set[str] = frozenset(), path: str = "") -> Iterator[tuple[str, str]]:
    """(key path, key) of every key of every record in document; map keys are walked through."""
    if path in opaque:
        return
    if isinstance(document, dict):
        is_map = path in maps
        for key, value in document.items():
            step = "*" if is_map else key
            child = f"{path}.{step}" if path else step
            if not is_map:
                yield child, key
            yield from key_paths(value, maps, opaque, child)
    elif isinstance(document, list):
        for item in document:
            yield from key_paths(item, maps, opaque, f"{path}[]")


def undocumented(document: Any, where: tuple[Path, str], maps: set[str], opaque: set[str] = frozenset()) -> list[str]:
    known = documented_keys(section(*where))
    return sorted({path for path, key in key_paths(document, maps, opaque) if key not in known})


def assert_documented(document: Any, what: str, where: tuple[Path, str], maps: set[str],
                      opaque: set[str] = frozenset()) -> None:
    missing = undocumented(document, where, maps, opaque)
    assert not missing, (
        f"{where[0].relative_to(PROJECT)} does not document these keys of {what} (each must appear as "
        f"`key` under the heading with {where[1]!r}):\n  " + "\n  ".join(missing))


MANIFEST_MAPS, MANIFEST_OPAQUE = schema_maps(manifest_schema())


# --------------------------------------------------------------------------- the walker's own tests


TOY_DOC = """\
# The toy file

| key | meaning |
|---|---|
| `name` | its name |
| `parts` | part name -> `size`, `colour` |

```
{"hidden": "fenced code documents nothing"}
```
`weight, height` documents neither.

# Another file

`rows`
"""


def test_the_walker_names_each_undocumented_key_and_walks_through_maps(tmp_path):
    doc = tmp_path / "toy.md"
    doc.write_text(TOY_DOC)
    toy = {"name": "t", "parts": {"wheel": {"size": 3, "colour": "red"}, "door": {"size": 1, "hidden": 1}},
           "list": [{"weight": 1}, {"rows": 2}], "free": {"anything": {"goes": 1}}}
    assert documented_keys(section(doc, "toy")) == {"name", "parts", "size", "colour", "weight, height"}
    assert undocumented(toy, (doc, "toy"), maps={"parts"}, opaque={"free"}) == [
        "free", "list", "list[].rows", "list[].weight", "parts.*.hidden"]
    with pytest.raises(AssertionError, match="0 top-level headings"):
        section(doc, "missing")


def test_the_manifest_maps_come_from_its_schema():
    assert {"models", "models.*.operators", "models.*.opsets", "models.*.assets", "models.*.bench_inputs",
            "models.*.validation.outputs", "models.*.variants.fp32.vs_fp32.outputs",
            "models.*.provenance.tools"} <= MANIFEST_MAPS
    assert {"models.*.facts", "models.*.variants.int8-static.settings.extra_options"} <= MANIFEST_OPAQUE
    assert "models.*.variants" not in MANIFEST_MAPS  # a record: every variant of the table, by name


def test_an_undocumented_manifest_key_fails_naming_it(imported_manifest):
    manifest = copy.deepcopy(imported_manifest)
    entry = manifest["models"]["classifier"]
    entry["variants"]["fp32"]["speed"]["warp_factor"] = 9
    entry["producer"]["mood"] = "cheerful"
    entry["operators"]["Frobnicate"] = 1  # a map key: data, not a key to document
    assert undocumented(manifest, MANIFEST, MANIFEST_MAPS, MANIFEST_OPAQUE) == [
        "models.*.producer.mood", "models.*.variants.fp32.speed.warp_factor"]
    with pytest.raises(AssertionError, match=r"docs/manifest.md does not document .*\n\s+models\.\*\.producer\.mood\n"):
        assert_documented(manifest, "manifest.json", MANIFEST, MANIFEST_MAPS, MANIFEST_OPAQUE)


# --------------------------------------------------------------------------- the manifest


def _classifier_test_directory(folder: Path) -> Path:
    """model.onnx (logits = x @ W, label = argmax) and one test_data_set: float and integer outputs."""
    weight = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["logits"], name="matmul"),
         helper.make_node("ArgMax", ["logits"], ["label"], name="argmax", axis=1, keepdims=0)],
        "classifier",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 3]),
         helper.make_tensor_value_info("label", TensorProto.INT64, ["batch"])],
        [numpy_helper.from_array(weight, "W")],
    )
    folder.mkdir(parents=True)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), folder / "model.onnx")
    x = np.random.default_rng(2).standard_normal((6, 4)).astype(np.float32)
    logits = x @ weight
    data = folder / "test_data_set_0"
    data.mkdir()
    for prefix, k, name, value in (("input", 0, "x", x), ("output", 0, "logits", logits),
                                   ("output", 1, "label", logits.argmax(1).astype(np.int64))):
        (data / f"{prefix}_{k}.pb").write_bytes(numpy_helper.from_array(value, name).SerializeToString())
    return folder


@pytest.fixture(scope="module")
def imported_manifest(tmp_path_factory) -> dict:
    """The manifest of one imported ONNX test directory (a classifier with an integer output)."""
    work = tmp_path_factory.mktemp("docs-import")
    folder = _classifier_test_directory(work / "classifier")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(work)  # onnxruntime's shape inference writes temporary files into the working folder
        code = cli.main(["--repository", str(work / "repository"), "import", str(folder), "--name", "classifier",
                         "--task", "classification", "--metric-output", "logits", "--quiet"])
    assert code == 0, "importing the test directory failed; see the captured stderr"
    return json.loads((work / "repository" / "manifest.json").read_text())


def test_every_key_of_an_imported_model_is_documented(imported_manifest):
    assert_documented(imported_manifest, "manifest.json (an imported model)", MANIFEST, MANIFEST_MAPS, MANIFEST_OPAQUE)


@pytest.mark.slow
def test_every_key_of_the_demo_build_is_documented(demo_manifest):
    assert_documented(demo_manifest, "manifest.json (the demo build)", MANIFEST, MANIFEST_MAPS, MANIFEST_OPAQUE)


def test_every_key_the_manifest_types_allow_is_documented():
    """Keys a build writes only sometimes (first_mismatch, cosine_mean...) too: the schema lists them all."""
    names = {key for definition in manifest_schema()["$defs"].values() for key in definition.get("properties", {})}
    names |= set(manifest_schema()["properties"])
    assert sorted(names - documented_keys(section(*MANIFEST))) == []


# --------------------------------------------------------------------------- check and bench


def _onnxport(*args: object, timeout: float = 600) -> None:
    run = subprocess.run([sys.executable, "-m", "onnxport", *map(str, args)], cwd=PROJECT,
                         capture_output=True, text=True, timeout=timeout)
    assert run.returncode == 0, f"`onnxport {' '.join(map(str, args))}` exited {run.returncode}:\n{run.stderr[-3000:]}"


@pytest.mark.slow
def test_every_key_of_a_check_report_and_of_conformance_json_is_documented(repository_copy, tmp_path):
    """iris (the smallest demo) in every browser runtime: about 20 s in headless Chromium."""
    repository = repository_copy(models=["iris"])
    _onnxport("--repository", repository, "check", "iris", "--json", tmp_path / "report.json")
    report = json.loads((tmp_path / "report.json").read_text())
    assert {r["runtime"] for r in report["results"]} >= {"source", "wasm"}
    assert_documented(report, "the `onnxport check` report", REPORT, REPORT_MAPS)
    verdicts = json.loads((repository / "conformance.json").read_text())
    assert verdicts["verdicts"], "the check recorded no verdict"
    assert_documented(verdicts, "conformance.json", VERDICTS, set(), VERDICTS_OPAQUE)


@pytest.mark.slow
def test_every_key_of_bench_json_is_documented(repository_copy):
    """iris, one browser runtime (wasm-1t: it also gives the operator profile), 3 runs: about 20 s."""
    repository = repository_copy(models=["iris"])
    _onnxport("--repository", repository, "bench", "iris", "--runs", "3", "--runtimes", "wasm-1t")
    bench = json.loads((repository / "bench.json").read_text())
    assert bench["models"]["iris"]["operator_profile"] and bench["browser"]["results"]
    assert_documented(bench, "bench.json", BENCH, BENCH_MAPS)
