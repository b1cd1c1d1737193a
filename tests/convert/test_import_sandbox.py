"""The import's process boundary: a file that crashes native code, or makes it allocate or loop without end, ends
as one line with exit 1 or 2, no signal, nothing in .staging/ and the manifest unchanged (convert/sandbox.py).

The attacks, measured before the boundary (each in `onnxport import`'s own process, no limits): LightGBM text
with num_leaves=1e9 ended in SIGABRT and split_feature=2e9 in SIGSEGV, num_class=1e9 grew past 7.5 GB in 8 s;
XGBoost JSON with a child or split index out of range, or nested 100,000 deep, each SIGSEGV, num_feature=2e9
passed 7.7 GB in 23 s; a 4 KB ONNX model whose ConstantOfShape computes 3.4 GiB passed 7.5 GB in 14 s and left
.staging/ behind. None printed a line of onnxport's for the signals. The tree files are made here from tiny real
models (trained in a subprocess: OpenMP's thread pool in this process would not survive the import's fork) and
edited to the hostile value; every import runs under a small --memory-limit so the tests stay light.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from onnxport.convert.intake import value_budget
from onnxport.convert.intake.export import check_and_infer
from onnxport.errors import UsageError
from onnxport.project import PROJECT_ROOT
from onnxport.repository import layout
from onnxport.serving import config

LIMIT = "1GiB"  # --memory-limit of the attacks: a tiny tree model's import maps about 0.5 GiB

TRAIN = textwrap.dedent("""
    import sys
    import lightgbm, numpy as np, xgboost
    folder = sys.argv[1]
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 4)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(int)
    lightgbm.LGBMClassifier(n_estimators=3, num_leaves=4, verbose=-1).fit(x, y).booster_.save_model(folder + "/lgb.txt")
    xgboost.XGBClassifier(n_estimators=3, max_depth=2).fit(x, y).save_model(folder + "/xgb.json")
""")

# Run `onnxport` with the pre-checks of the tree files switched off (tree_limits.py and its readers, where
# present), so that a hostile file reaches its library's native loader whatever the pre-checks refuse.
WITHOUT_PRE_CHECKS = textwrap.dedent("""
    import importlib, sys
    for name in ("lightgbm_text", "xgboost_document"):
        try:
            importlib.import_module("onnxport.convert.intake." + name).check = lambda *args, **kwargs: None
        except ImportError:
            pass
    from onnxport.cli import main
    sys.exit(main(sys.argv[1:]))
""")


def chain(nodes: int) -> onnx.ModelProto:
    made = [
        helper.make_node("Relu", [f"v{i}" if i else "x"], ["y" if i == nodes - 1 else f"v{i + 1}"], name=f"n{i}")
        for i in range(nodes)
    ]
    value = helper.make_tensor_value_info
    graph = helper.make_graph(
        made, "chain", [value("x", TensorProto.FLOAT, ["n", 4])], [value("y", TensorProto.FLOAT, ["n", 4])]
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def constant_of_shape(rows: int = 30_000, cols: int = 30_000) -> onnx.ModelProto:
    """x [1] -> x + sum(ConstantOfShape([rows, cols])): 225 bytes that compute rows x cols float32 values."""
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [rows, cols])
    nodes = [
        helper.make_node("Constant", [], ["shape"], value=shape),
        helper.make_node(
            "ConstantOfShape",
            ["shape"],
            ["big"],
            name="fill",
            value=helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0]),
        ),
        helper.make_node("ReduceSum", ["big"], ["total"], keepdims=0),
        helper.make_node("Add", ["x", "total"], ["y"]),
    ]
    value = helper.make_tensor_value_info
    graph = helper.make_graph(nodes, "fill", [value("x", TensorProto.FLOAT, [1])], [value("y", TensorProto.FLOAT, [1])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.fixture(scope="module")
def tree_files(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("trees")
    subprocess.run([sys.executable, "-c", TRAIN, str(folder)], check=True, timeout=300)
    return folder


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A repository holding one small imported model, so that "the manifest is unchanged" means something."""
    folder = tmp_path_factory.mktemp("template")
    onnx.save(chain(3), folder / "small.onnx")
    code, err, _ = onnxport(
        "--repository",
        folder / "repository",
        "import",
        folder / "small.onnx",
        "--name",
        "small",
        "--quiet",
        "--forms",
        "none",
    )
    assert code == 0, err
    return folder / "repository"


@pytest.fixture
def repository(template, tmp_path) -> Path:
    copy = tmp_path / "repository"
    shutil.copytree(template, copy)
    return copy


def onnxport(*args: object, driver: str | None = None, timeout: float = 300) -> tuple[int, str, float]:
    """`onnxport ARGS` in its own process, no ONNXPORT_* settings: (exit code, stderr, wall seconds)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONNXPORT_")}
    command = [sys.executable, "-c", driver] if driver else [sys.executable, "-m", "onnxport"]
    start = time.perf_counter()
    done = subprocess.run(
        [*command, *map(str, args)], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    return done.returncode, done.stderr, time.perf_counter() - start


def snapshot(repository: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(repository)): p.read_bytes()
        for p in sorted(repository.rglob("*"))
        if p.is_file() and p.name != layout.LOCK_FILE
    }


def attack(
    repository: Path, model: Path, *options: object, driver: str | None = None, expect: tuple[int, ...] = (1, 2)
) -> str:
    """Import `model` into `repository`: one line, an expected exit code, nothing written; returns the line."""
    before = snapshot(repository)
    code, err, seconds = onnxport(
        "--repository",
        repository,
        "import",
        model,
        "--name",
        "attack",
        "--quiet",
        "--forms",
        "none",
        "--memory-limit",
        LIMIT,
        *options,
        driver=driver,
    )
    print(f"\n{model.name}: exit {code} in {seconds:.1f} s: {err.strip()}")
    assert code >= 0, f"killed by {signal.Signals(-code).name}: {err}"
    assert code in expect, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("onnxport: error: "), err
    assert str(model) in lines[0], "the line names the file"
    assert not (repository / layout.STAGING_DIR).exists(), "the child's staged files were cleared"
    assert snapshot(repository) == before, "the manifest and the files are unchanged"
    return lines[0]


def lightgbm_with(tree_files: Path, folder: Path, field: str, value: int) -> Path:
    """The tiny LightGBM model with `field` set to `value` (num_class in the header, else in Tree=0)."""
    text = (tree_files / "lgb.txt").read_text()
    if field == "num_class":
        text = re.sub(r"^num_class=\d+$", f"num_class={value}", text, count=1, flags=re.M)
    else:
        head, trees = text.split("Tree=0\n", 1)
        trees = re.sub(rf"^{field}=(\d+)", f"{field}={value}", trees, count=1, flags=re.M)
        text = head + "Tree=0\n" + trees
    path = folder / f"lgb-{field}.txt"
    path.write_text(text)
    return path


def xgboost_with(tree_files: Path, folder: Path, edit: str) -> Path:
    path = folder / f"xgb-{edit}.json"
    if edit == "nested":
        path.write_text('{"learner": ' + "[" * 100_000 + "]" * 100_000 + "}")
        return path
    document = json.loads((tree_files / "xgb.json").read_text())
    tree = document["learner"]["gradient_booster"]["model"]["trees"][0]
    if edit == "child":
        tree["left_children"][0] = 1000
    elif edit == "split":
        tree["split_indices"][0] = 2_000_000_000
    else:
        document["learner"]["learner_model_param"][edit] = "2000000000"
    path.write_text(json.dumps(document))
    return path


CRASHING = {
    "lightgbm num_leaves=1e9": lambda trees, folder: lightgbm_with(trees, folder, "num_leaves", 1_000_000_000),
    "lightgbm split_feature=2e9": lambda trees, folder: lightgbm_with(trees, folder, "split_feature", 2_000_000_000),
    "xgboost child index out of range": lambda trees, folder: xgboost_with(trees, folder, "child"),
    "xgboost split index out of range": lambda trees, folder: xgboost_with(trees, folder, "split"),
    "xgboost JSON nested 100,000 deep": lambda trees, folder: xgboost_with(trees, folder, "nested"),
}


@pytest.mark.parametrize("case", CRASHING)
def test_a_tree_file_that_crashed_its_library_is_one_line(case, tree_files, repository, tmp_path):
    """Whichever stops it (the pre-checks, or the boundary once native code crashed): exit 2, one line."""
    attack(repository, CRASHING[case](tree_files, tmp_path), expect=(2,))


@pytest.mark.parametrize("case", CRASHING)
def test_native_code_that_crashes_on_a_file_is_one_line_past_the_pre_checks(case, tree_files, repository, tmp_path):
    """The pre-checks switched off: the real loader meets the file, dies of a signal in the child, and the parent
    says so, naming the signal and the step."""
    line = attack(repository, CRASHING[case](tree_files, tmp_path), driver=WITHOUT_PRE_CHECKS, expect=(2,))
    assert re.search(r"native code crashed on this file with SIG(SEGV|ABRT|BUS)", line), line
    assert "at step '" in line and "nothing was written" in line


@pytest.mark.parametrize(
    "case, field",
    [
        ("lightgbm num_class=1e9", "num_class"),
        ("xgboost num_feature=2e9", "num_feature"),
        ("xgboost num_class=1e9", "num_class"),
    ],
)
def test_a_tree_file_that_allocates_without_end_stops_at_the_memory_limit(
    case, field, tree_files, repository, tmp_path
):
    model = (
        lightgbm_with(tree_files, tmp_path, field, 1_000_000_000)
        if case.startswith("lightgbm")
        else xgboost_with(tree_files, tmp_path, field)
    )
    line = attack(repository, model, driver=WITHOUT_PRE_CHECKS, expect=(1,))
    for fragment in ("reached the 1 GiB address-space limit", "import_memory_limit", "--memory-limit"):
        assert fragment in line, line


def test_a_graph_that_computes_gigabytes_stops_at_the_memory_limit(repository, tmp_path):
    model = tmp_path / "fill.onnx"
    onnx.save(constant_of_shape(), model)
    assert model.stat().st_size < 4096
    line = attack(repository, model)
    assert "import_memory_limit" in line or "budget for one value" in line, line


def test_a_value_over_its_budget_is_refused_by_its_inferred_shape():
    """Before any session: the node, the shape and the budget named; a dynamic shape is left to the limit."""
    with pytest.raises(UsageError) as refused:
        check_and_infer(constant_of_shape(), "fill.onnx", max_value_bytes=value_budget.budget_for(8 << 30))
    line = str(refused.value)
    for fragment in (
        "fill.onnx",
        "'fill' (ConstantOfShape)",
        "[30000, 30000]",
        "3.35 GiB",
        "2 GiB",
        "import_memory_limit",
        "--memory-limit",
    ):
        assert fragment in line, line
    check_and_infer(constant_of_shape(), "fill.onnx")  # no budget, no check
    check_and_infer(constant_of_shape(100, 100), "fill.onnx", max_value_bytes=40_000)  # 40,000 bytes: within
    check_and_infer(chain(3), "chain.onnx", max_value_bytes=1)  # [n, 4]: known at run time only


def test_the_cpu_limit_stops_the_import_and_writes_nothing(repository, tmp_path):
    model = tmp_path / "chain.onnx"
    onnx.save(chain(10_000), model)  # several CPU-seconds of onnxruntime sessions for fp32 and fp16
    line = attack(repository, model, "--cpu-limit", "1", expect=(1,))
    for fragment in ("CPU-time limit of 1 s", "import_cpu_limit", "--cpu-limit", "nothing was written"):
        assert fragment in line, line


def test_a_normal_tree_import_runs_through_the_boundary(tree_files, repository):
    code, err, _ = onnxport(
        "--repository",
        repository,
        "import",
        tree_files / "lgb.txt",
        "--name",
        "trees",
        "--quiet",
        "--forms",
        "none",
        "--memory-limit",
        "2GiB",
    )
    assert code == 0, err
    assert "trees" in json.loads((repository / "manifest.json").read_text())["models"]


def start_import(repository: Path, model: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONNXPORT_")}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "onnxport",
            "--repository",
            str(repository),
            "import",
            str(model),
            "--name",
            "chain",
            "--quiet",
        ],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_until_staged(process: subprocess.Popen, repository: Path) -> None:
    deadline = time.monotonic() + 300
    while not [p for p in (repository / layout.STAGING_DIR).rglob("*") if p.is_file()]:
        assert process.poll() is None, f"the import ended before it staged anything: {process.stderr.read()!r}"
        assert time.monotonic() < deadline, "the import staged nothing in 300 s"
        time.sleep(0.05)


def test_ctrl_c_reaches_the_child_and_leaves_the_repository_unchanged(repository, tmp_path):
    """SIGINT to `onnxport import` alone (not its process group): the parent passes it on."""
    model = tmp_path / "chain.onnx"
    onnx.save(chain(3_000), model)
    before = snapshot(repository)
    process = start_import(repository, model)
    wait_until_staged(process, repository)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert err.strip().splitlines() == ["onnxport: interrupted; the repository is unchanged"], err
    assert not (repository / layout.STAGING_DIR).exists()
    assert snapshot(repository) == before


def test_killing_the_import_kills_its_child(repository, tmp_path):
    """kill -9 of `onnxport import`: its child must not go on writing (the next writer clears what it staged)."""
    model = tmp_path / "chain.onnx"
    onnx.save(chain(3_000), model)
    process = start_import(repository, model)
    wait_until_staged(process, repository)
    children = [
        int(pid) for path in Path(f"/proc/{process.pid}/task").glob("*/children") for pid in path.read_text().split()
    ]
    assert children, "the import runs in a child process"
    process.kill()
    process.communicate(timeout=60)
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{pid}").exists() and "Z" not in _state(pid) for pid in children):
        assert time.monotonic() < deadline, "the child outlived its parent by 30 s"
        time.sleep(0.05)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


def test_the_limits_are_settings_with_their_options(tmp_path, run_cli, assert_one_line_error):
    settings = config.load({})
    assert settings["import_memory_limit"] == 8 << 30 and settings["import_cpu_limit"] == 7200
    assert config.load({"import_memory_limit": "512MiB"})["import_memory_limit"] == 512 << 20
    model = tmp_path / "chain.onnx"
    onnx.save(chain(3), model)
    for option, value, fragment in (
        ("--memory-limit", "lots", "at least 256 MiB"),
        ("--memory-limit", "1MiB", "at least 256 MiB"),
        ("--cpu-limit", "-1", "seconds, 0 or more"),
    ):
        code, _, err = run_cli("--repository", tmp_path / "repo", "import", model, "--name", "chain", option, value)
        assert code == 2
        assert_one_line_error(err, option, repr(value), fragment)
    assert not (tmp_path / "repo").exists()
