"""The docs stay honest: README.md (the front page) and the pages of docs/ (guide/, reference/, notes/).

Over README + docs: every server setting is in the one "Settings" section; every `onnxport` command is
named and each of its options is written in a page that names the command; every relative link and
image resolves to a file (and a `#fragment` to a heading of the linked page); every repository path in
backticks exists, so a rename that forgets the docs fails here; and README.md stays a front page
(at most README_MAX_WORDS words).

And the docs describe every key the code writes: docs/reference/manifest.md (manifest.json; bench.json is held to it
in tests/bench/test_bench.py, where its bench runs) and docs/reference/conformance.md (the `onnxport check` report,
conformance.json). What "documented" means, and the walker that lists every key path of a real file, are
tests/fixtures/doc_keys.py's. For the manifest, maps and free-form objects are read off its JSON Schema
(`additionalProperties`); for the other files doc_keys lists them.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from fixtures.doc_keys import (
    MANIFEST,
    REPORT,
    REPORT_MAPS,
    VERDICTS,
    VERDICTS_OPAQUE,
    assert_documented,
    documented_keys,
    schema_maps,
    section,
    undocumented,
)
from onnxport import cli
from onnxport.repository.schema import manifest_schema
from onnxport.serving.config import SETTINGS

PROJECT = Path(__file__).resolve().parents[1]
README = PROJECT / "README.md"
# The front page, then the topic pages: everything a reader is sent to.
DOCS = [README, *sorted((PROJECT / "docs").rglob("*.md"))]
# The README is the front page: what it is, the two ways in, a tour, links. Detail goes to docs/.
README_MAX_WORDS = 900

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
    toy = {
        "name": "t",
        "parts": {"wheel": {"size": 3, "colour": "red"}, "door": {"size": 1, "hidden": 1}},
        "list": [{"weight": 1}, {"rows": 2}],
        "free": {"anything": {"goes": 1}},
    }
    assert documented_keys(section(doc, "toy")) == {"name", "parts", "size", "colour", "weight, height"}
    assert undocumented(toy, (doc, "toy"), maps={"parts"}, opaque={"free"}) == [
        "free",
        "list",
        "list[].rows",
        "list[].weight",
        "parts.*.hidden",
    ]
    with pytest.raises(AssertionError, match="0 top-level headings"):
        section(doc, "missing")


def test_the_manifest_maps_come_from_its_schema():
    assert {
        "models",
        "models.*.operators",
        "models.*.opsets",
        "models.*.assets",
        "models.*.bench_inputs",
        "models.*.validation.outputs",
        "models.*.variants.fp32.vs_fp32.outputs",
        "models.*.provenance.tools",
    } <= MANIFEST_MAPS
    assert {"models.*.facts", "models.*.variants.int8-static.settings.extra_options"} <= MANIFEST_OPAQUE
    assert "models.*.variants" not in MANIFEST_MAPS  # a record: every variant of the table, by name


def test_an_undocumented_manifest_key_fails_naming_it(imported_manifest):
    manifest = copy.deepcopy(imported_manifest)
    entry = manifest["models"]["classifier"]
    entry["variants"]["fp32"]["speed"]["warp_factor"] = 9
    entry["producer"]["mood"] = "cheerful"
    entry["operators"]["Frobnicate"] = 1  # a map key: data, not a key to document
    assert undocumented(manifest, MANIFEST, MANIFEST_MAPS, MANIFEST_OPAQUE) == [
        "models.*.producer.mood",
        "models.*.variants.fp32.speed.warp_factor",
    ]
    with pytest.raises(
        AssertionError, match=r"docs/reference/manifest.md does not document .*\n\s+models\.\*\.producer\.mood\n"
    ):
        assert_documented(manifest, "manifest.json", MANIFEST, MANIFEST_MAPS, MANIFEST_OPAQUE)


# --------------------------------------------------------------------------- the manifest


def _classifier_test_directory(folder: Path) -> Path:
    """model.onnx (logits = x @ W, label = argmax) and one test_data_set: float and integer outputs."""
    weight = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W"], ["logits"], name="matmul"),
            helper.make_node("ArgMax", ["logits"], ["label"], name="argmax", axis=1, keepdims=0),
        ],
        "classifier",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [
            helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 3]),
            helper.make_tensor_value_info("label", TensorProto.INT64, ["batch"]),
        ],
        [numpy_helper.from_array(weight, "W")],
    )
    folder.mkdir(parents=True)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), folder / "model.onnx")
    x = np.random.default_rng(2).standard_normal((6, 4)).astype(np.float32)
    logits = x @ weight
    data = folder / "test_data_set_0"
    data.mkdir()
    for prefix, k, name, value in (
        ("input", 0, "x", x),
        ("output", 0, "logits", logits),
        ("output", 1, "label", logits.argmax(1).astype(np.int64)),
    ):
        (data / f"{prefix}_{k}.pb").write_bytes(numpy_helper.from_array(value, name).SerializeToString())
    return folder


@pytest.fixture(scope="module")
def imported_manifest(tmp_path_factory) -> dict:
    """The manifest of one imported ONNX test directory (a classifier with an integer output)."""
    work = tmp_path_factory.mktemp("docs-import")
    folder = _classifier_test_directory(work / "classifier")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(work)  # onnxruntime's shape inference writes temporary files into the working folder
        code = cli.main(
            [
                "--repository",
                str(work / "repository"),
                "import",
                str(folder),
                "--name",
                "classifier",
                "--task",
                "classification",
                "--metric-output",
                "logits",
                "--quiet",
            ]
        )
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
    run = subprocess.run(
        [sys.executable, "-m", "onnxport", *map(str, args)],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert run.returncode == 0, f"`onnxport {' '.join(map(str, args))}` exited {run.returncode}:\n{run.stderr[-3000:]}"


@pytest.mark.slow
def test_every_key_of_a_check_report_and_of_conformance_json_is_documented(repository_copy, tmp_path):
    """iris (the smallest demo) in every browser runtime: about 20 s in headless Chromium."""
    repository = repository_copy(models=["iris"])
    _onnxport("--repository", repository, "check", "iris", "--browsers", "chromium", "--json", tmp_path / "report.json")
    report = json.loads((tmp_path / "report.json").read_text())
    assert {r["runtime"] for r in report["results"]} >= {"source", "wasm"}
    assert_documented(report, "the `onnxport check` report", REPORT, REPORT_MAPS)
    verdicts = json.loads((repository / "conformance.json").read_text())
    assert verdicts["verdicts"], "the check recorded no verdict"
    assert_documented(verdicts, "conformance.json", VERDICTS, set(), VERDICTS_OPAQUE)


# --------------------------------------------------------------------------- README and docs/


def prose(doc: Path) -> str:
    """doc's text without its fenced code."""
    return re.sub(r"^```.*?^```", "", doc.read_text(), flags=re.S | re.M)


def heading_section(doc: Path, title: str) -> str | None:
    """The text under doc's heading `title` (any level), up to the next heading of that level or higher."""
    lines, fenced = doc.read_text().splitlines(), False
    for i, line in enumerate(lines):
        fenced ^= line.startswith("```")
        heading = re.fullmatch(r"(#+) (.*?)\s*", line)
        if fenced or not heading or heading.group(2) != title:
            continue
        level, body = len(heading.group(1)), []
        for later in lines[i + 1 :]:
            fenced ^= later.startswith("```")
            deeper = re.match(r"(#+) ", later)
            if not fenced and deeper and len(deeper.group(1)) <= level:
                break
            body.append(later)
        return "\n".join(body)
    return None


def settings_section() -> tuple[Path, str]:
    found = [(doc, text) for doc in DOCS if (text := heading_section(doc, "Settings")) is not None]
    assert len(found) == 1, (
        f"{len(found)} 'Settings' sections in README.md and docs/ "
        f"({[str(doc.relative_to(PROJECT)) for doc, _ in found]}); the server's settings "
        "are documented in exactly one"
    )
    return found[0]


@pytest.mark.parametrize("name", [s.name for s in SETTINGS])
def test_every_setting_is_documented(name):
    doc, text = settings_section()
    assert f"`{name}`" in text, f"setting {name!r} is not in the Settings section of {doc.relative_to(PROJECT)}"


def test_the_settings_section_says_where_settings_come_from():
    doc, text = settings_section()
    assert "ONNXPORT_CONFIG" in text and "ONNXPORT_<NAME>" in text, (
        f"the Settings section of {doc.relative_to(PROJECT)} must name ONNXPORT_CONFIG and ONNXPORT_<NAME>"
    )


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """`onnxport ...` command line (leaves only: `onnxport export triton`, not `onnxport export`) -> its
    long options, but for --repository, which every command takes."""
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subparsers:
        options = [
            o
            for a in parser._actions
            for o in a.option_strings
            if o.startswith("--") and o not in ("--help", "--repository")
        ]
        return {" ".join(("onnxport", *path)): options}
    found: dict[str, list[str]] = {}
    for action in subparsers:
        for name, sub in action.choices.items():
            found.update(commands(sub, (*path, name)))
    return found


COMMANDS = commands(cli.build_parser())


def mentions(text: str, word: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None


def test_the_command_walk_finds_every_command():
    assert {
        "onnxport build",
        "onnxport import",
        "onnxport serve",
        "onnxport check",
        "onnxport bench",
        "onnxport export triton",
        "onnxport export kserve",
        "onnxport deploy ray",
    } <= set(COMMANDS)
    assert "--storage-uri" in COMMANDS["onnxport export kserve"] and "--repository" not in COMMANDS["onnxport list"]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_and_option_is_documented(command):
    """Fenced code counts here: a synopsis is where options are written."""
    pages = {doc: doc.read_text() for doc in DOCS}
    naming = [doc for doc, text in pages.items() if mentions(text, command)]
    assert naming, f"`{command}` is named in neither README.md nor a page of docs/"
    missing = [option for option in COMMANDS[command] if not any(mentions(pages[doc], option) for doc in naming)]
    assert not missing, (
        f"options of `{command}` written in no page that names the command "
        f"({', '.join(str(d.relative_to(PROJECT)) for d in naming)}): {', '.join(missing)}"
    )
    assert any(mentions(text, "--repository") for text in pages.values())


def slug(heading: str) -> str:
    """A heading's anchor, as GitHub makes it: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    seen: dict[str, int] = {}
    for line in prose(doc).splitlines():
        if heading := re.match(r"#+ (.*)", line):
            base = slug(heading.group(1))
            seen[base] = seen.get(base, -1) + 1
            seen[f"{base}-{seen[base]}" if seen[base] else base] = 0
    return set(seen)


def shown(path: Path) -> Path:
    return path.relative_to(PROJECT) if path.is_relative_to(PROJECT) else path


def broken_links(doc: Path) -> list[str]:
    """Each relative link or image of doc whose file (or `#fragment` heading) does not exist."""
    broken = []
    for target in re.findall(r"!?\[[^\]]*\]\(([^)\s]+)\)", prose(doc)):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        file, _, fragment = target.partition("#")
        path = (doc.parent / file).resolve() if file else doc
        if not path.exists():
            broken.append(f"{target} (no file {shown(path)})")
        elif fragment and path.suffix == ".md" and fragment not in anchors(path):
            broken.append(f"{target} (no heading #{fragment} in {shown(path)})")
    return broken


def test_the_link_check_finds_a_broken_file_and_a_broken_heading(tmp_path):
    (tmp_path / "other.md").write_text("# Other page\n\n## `bench.json`, schema v1\n\n## Limits\n\n## Limits\n")
    doc = tmp_path / "doc.md"
    doc.write_text(
        "[ok](other.md#benchjson-schema-v1) [ok](other.md#limits-1) [ok](#a-heading) "
        "[web](https://example.com/x.md) ![gone](gone.png) [bad](other.md#nowhere)\n\n# A heading\n"
        "```\n[in code](nowhere.md)\n```\n"
    )
    assert broken_links(doc) == [
        f"gone.png (no file {tmp_path / 'gone.png'})",
        f"other.md#nowhere (no heading #nowhere in {tmp_path / 'other.md'})",
    ]


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: str(doc.relative_to(PROJECT)))
def test_every_relative_link_resolves(doc):
    assert not broken_links(doc), f"{doc.relative_to(PROJECT)} links to what does not exist:\n  " + "\n  ".join(
        broken_links(doc)
    )


# Paths in backticks that name a file or folder of the repository: from the project root, or a module of
# the package written from its layer (`serving/asgi.py`, `accuracy/measure.verdict`).
ROOT_FOLDERS = {"server", "web", "scripts", "build_backend", "tests", "docs", "models"}
PACKAGE = PROJECT / "server" / "onnxport"
LAYERS = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
# Made by `make run` and `make testdata`, not in git: they may be missing from a fresh clone.
GENERATED = ("models/.repository", "tests/data/third-party", "tests/data/onnx-backend")


def repository_path(span: str) -> Path | None:
    """The file a span names, or None when the span is not a repository path."""
    if not re.fullmatch(r"[\w.\-/]+/[\w.\-/]*", span) or re.search(r"[A-Z]{2,}", span):
        return None  # not a path, or a placeholder (models/NAME.py)
    first = span.split("/", 1)[0]
    if first in ROOT_FOLDERS:
        return PROJECT / span
    if first in LAYERS and re.search(r"\.\w+$", span):
        module, _, attribute = span.rpartition(".")
        return PACKAGE / (span if attribute in ("py", "js") else module + ".py")
    return None


def test_the_path_check_reads_both_forms():
    assert repository_path("server/onnxport/cli.py") == PACKAGE / "cli.py"
    assert repository_path("serving/asgi.py") == PACKAGE / "serving" / "asgi.py"
    assert repository_path("accuracy/measure.verdict") == PACKAGE / "accuracy" / "measure.py"
    assert repository_path("models/NAME.py") is None and repository_path("fp32/wasm") is None
    assert repository_path("artifacts/<sha256>.onnx") is None and repository_path("text/javascript") is None


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: str(doc.relative_to(PROJECT)))
def test_every_path_in_backticks_exists(doc):
    missing = sorted(
        {
            span
            for span in re.findall(r"`([^`\n]+)`", prose(doc))
            if (path := repository_path(span)) is not None and not path.exists() and not span.startswith(GENERATED)
        }
    )
    assert not missing, (
        f"{doc.relative_to(PROJECT)} names paths that do not exist (renamed? moved?):\n  " + "\n  ".join(missing)
    )


# Paths written in the docstrings of the code (`serving/ray/replicas.py`, `web/lib/tensors/tensors.js`): each must
# name a file of the repository, from the root or from any folder (a module names its siblings by their package's
# path). Other projects' files, named as theirs, start with their project.
DOCSTRING_PATH = re.compile(r"(?<![\w/.\-<{$])((?:[\w\-]+/)+[\w\-]+\.(?:py|js|mjs|md|json|toml|html|css))(?![\w/])")
# The last two: Transformers.js's conversion scripts (scripts/peer/model_folder.py follows them).
OTHER_PROJECTS = ("onnxruntime/", "huggingface/", "scripts/convert.py", "scripts/quantize.py")
CODE_FOLDERS = ("server", "scripts", "tests", "models", "models-trees", "build_backend")


def docstring_paths(source: str) -> Iterator[str]:
    import ast

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from DOCSTRING_PATH.findall(ast.get_docstring(node, clean=False) or "")


def test_the_docstring_path_check_reads_a_path_and_skips_prose():
    source = '"""Served by serving/ray/replicas.py, (web/lib/tensors/tensors.js) and a/b, not x.py."""\n'
    assert list(docstring_paths(source)) == ["serving/ray/replicas.py", "web/lib/tensors/tensors.js"]


def test_every_path_a_docstring_names_exists():
    tracked = subprocess.run(["git", "ls-files"], cwd=PROJECT, capture_output=True, text=True, check=True).stdout
    files = ["/" + line for line in tracked.splitlines()]
    missing = []
    for folder in CODE_FOLDERS:
        for module in sorted((PROJECT / folder).rglob("*.py")):
            if "node_modules" in module.parts or not module.is_file():
                continue
            for span in docstring_paths(module.read_text()):
                if not span.startswith(OTHER_PROJECTS) and not any(f.endswith("/" + span) for f in files):
                    missing.append(f"{module.relative_to(PROJECT)}: {span}")
    assert not missing, "docstrings name files that do not exist (renamed? moved?):\n  " + "\n  ".join(missing)


def test_the_readme_is_a_front_page():
    words = len(README.read_text().split())
    assert words <= README_MAX_WORDS, (
        f"README.md has {words} words (at most {README_MAX_WORDS}): it is the front page; move detail into "
        "a page of docs/ and link it"
    )
