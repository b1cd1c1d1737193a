"""Import limits: a giant legal graph is refused (or imported) within the time budget, never left running.

The attack: a 100,000-node chain of Relu (2.7 MB, made with onnx.helper) ran over 129 CPU-seconds at
2.6 GB without finishing, stuck in the fp16 overflow probe's session. Now the import refuses it by its
node limit (import_max_nodes, --max-nodes) before any work, stops at its time limit (import_time_limit,
--time-limit) with nothing written, the overflow probe runs in pieces (linear in the graph), and fp16,
int8 and the fallback search skip graphs past their documented sizes, saying why in the variant table.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from graph_helpers import make_model, rng, tensor
from onnx import TensorProto, helper

from onnxport.accuracy import reasons
from onnxport.convert import fp16, int8, lower_precision, segments, variant_maker
from onnxport.convert.fp16 import overflow as fp16_overflow
from onnxport.convert.intake import onnx_file
from onnxport.errors import VariantSkipped
from onnxport.project import PROJECT_ROOT
from onnxport.serving import config


def chain(nodes: int, op: str = "Relu") -> onnx.ModelProto:
    """x [n, 4] -> op -> op -> ... -> y: the attack's shape (legal, one node after another)."""
    made = [
        helper.make_node(op, [f"v{i}" if i else "x"], ["y" if i == nodes - 1 else f"v{i + 1}"], name=f"n{i}")
        for i in range(nodes)
    ]
    graph = helper.make_graph(made, "chain", [tensor("x", "n", 4)], [tensor("y", "n", 4)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def files(root: Path) -> list[str]:
    """What a repository holds but its lock file."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.name != ".lock") if root.exists() else []


def onnxport(*args: object, timeout: float = 600) -> tuple[int, str, float, float | None]:
    """`onnxport ARGS` in its own process with no ONNXPORT_* settings: (exit code, stderr, wall seconds,
    peak RSS in MB). The RSS is GNU time's (/usr/bin/time): a child forked from pytest counts pytest's pages
    in its own maxrss until it execs, so getrusage here would report pytest's size."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONNXPORT_")}
    with tempfile.TemporaryDirectory() as folder:
        rss_file = Path(folder) / "rss"
        timer = ["/usr/bin/time", "-f", "%M", "-o", str(rss_file)] if Path("/usr/bin/time").exists() else []
        start = time.perf_counter()
        done = subprocess.run(
            [*timer, sys.executable, "-m", "onnxport", *map(str, args)],
            cwd=PROJECT_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        seconds = time.perf_counter() - start
        rss = int(rss_file.read_text().split()[-1]) / 1024 if timer and rss_file.exists() else None
    return done.returncode, done.stderr, seconds, rss


def test_the_100000_node_chain_is_refused_by_the_node_limit_at_once(tmp_path):
    path = tmp_path / "chain.onnx"
    onnx.save(chain(100_000), path)
    repository = tmp_path / "repository"
    code, err, seconds, rss = onnxport("--repository", repository, "import", path, "--name", "chain", "--quiet")
    print(
        f"\n100,000-node chain ({path.stat().st_size / 1e6:.1f} MB), default limits: exit {code} in {seconds:.1f} s, "
        f"peak RSS {'unknown (no /usr/bin/time)' if rss is None else f'{rss:.0f} MB'}"
    )
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("onnxport: error:"), err
    for fragment in ("100,000 nodes", "50,000", "--max-nodes", "import_max_nodes"):
        assert fragment in lines[0], lines[0]
    assert seconds < 60, "refused by its size, before any work that grows with the graph"
    assert files(repository) == [], "nothing written, not even a staging folder"


def test_the_default_node_limit_is_the_settings(tmp_path, run_cli, assert_one_line_error, monkeypatch):
    assert config.load({})["import_max_nodes"] == onnx_file.MAX_NODES
    path = tmp_path / "chain.onnx"
    onnx.save(chain(40), path)
    monkeypatch.setenv("ONNXPORT_IMPORT_MAX_NODES", "30")
    code, _, err = run_cli("--repository", tmp_path / "repo", "import", path, "--name", "chain", "--quiet")
    assert code == 2
    assert_one_line_error(err, "40 nodes", "limit of 30", "--max-nodes", "import_max_nodes")
    code, _, err = run_cli(
        "--repository",
        tmp_path / "repo",
        "import",
        path,
        "--name",
        "chain",
        "--quiet",
        "--forms",
        "none",
        "--max-nodes",
        "40",
    )
    assert code == 0, err  # the option wins over the setting


@pytest.mark.parametrize(
    "option, value, fragment",
    [
        ("--max-nodes", "0", "a whole number, 1 or more"),
        ("--max-nodes", "many", "a whole number, 1 or more"),
        ("--time-limit", "-1", "seconds, 0 or more"),
        ("--time-limit", "soon", "seconds, 0 or more"),
    ],
)
def test_a_bad_limit_is_one_line(tmp_path, run_cli, assert_one_line_error, option, value, fragment):
    path = tmp_path / "chain.onnx"
    onnx.save(chain(3), path)
    code, _, err = run_cli("--repository", tmp_path / "repo", "import", path, "--name", "chain", option, value)
    assert code == 2
    assert_one_line_error(err, option, repr(value), fragment)
    assert files(tmp_path / "repo") == []


def test_the_time_limit_stops_the_import_and_writes_nothing(tmp_path, run_cli, assert_one_line_error):
    small, big = tmp_path / "small.onnx", tmp_path / "big.onnx"
    onnx.save(chain(3), small)
    onnx.save(chain(3_000), big)
    repository = tmp_path / "repo"
    code, _, err = run_cli("--repository", repository, "import", small, "--name", "small", "--quiet")
    assert code == 0, err
    before = {p: p.read_bytes() for p in repository.rglob("*") if p.is_file()}
    start = time.perf_counter()
    code, _, err = run_cli("--repository", repository, "import", big, "--name", "big", "--quiet", "--time-limit", "1")
    seconds = time.perf_counter() - start
    print(f"\n3,000-node chain, --time-limit 1: exit {code} after {seconds:.1f} s: {err.strip()}")
    assert code == 1
    assert_one_line_error(err, "big:", "time limit of 1 s", "--time-limit", "import_time_limit", "nothing was written")
    assert seconds < 30, "stopped at its limit, not at the end of the import (one onnxruntime call may finish first)"
    assert {p: p.read_bytes() for p in repository.rglob("*") if p.is_file()} == before
    assert not (repository / ".staging").exists()


def test_a_chain_under_a_raised_limit_is_imported_with_every_pass(tmp_path, run_cli, assert_one_line_error):
    path = tmp_path / "chain.onnx"
    onnx.save(chain(5_000), path)
    repository = tmp_path / "repo"
    code, _, err = run_cli(
        "--repository", repository, "import", path, "--name", "chain", "--quiet", "--max-nodes", "4000"
    )
    assert code == 2
    assert_one_line_error(err, "5,000 nodes", "limit of 4,000")
    start = time.process_time()
    code, _, err = run_cli(
        "--repository",
        repository,
        "import",
        path,
        "--name",
        "chain",
        "--quiet",
        "--max-nodes",
        "5000",
        "--forms",
        "none",
    )
    seconds = time.process_time() - start
    print(f"\n5,000-node chain under --max-nodes 5000: exit {code} in {seconds:.1f} CPU-s")
    assert code == 0, err
    variants = json.loads((repository / "manifest.json").read_text())["models"]["chain"]["variants"]
    assert variants["fp32"]["status"] == "ok" and variants["fp16"]["status"] == "ok"


def _overflow_seconds(nodes: int) -> float:
    feeds = [{"x": rng(0).normal(size=(2, 4)).astype(np.float32)}]
    start = time.process_time()
    fp16_overflow._overflow(chain(nodes), feeds)
    return time.process_time() - start


def test_the_overflow_probe_grows_linearly_with_the_graph():
    """Measured before the pieces, 2,500 -> 10,000 nodes: 1.5 -> 10.7 CPU-s (7x for 4x); 20,000: 33 s."""
    small, large = 2_000, 16_000
    times = [_overflow_seconds(small), _overflow_seconds(large)]
    ratio = times[1] / times[0]
    print(
        f"\noverflow probe: {small:,} nodes {times[0]:.2f} CPU-s, {large:,} nodes {times[1]:.2f} CPU-s: "
        f"{ratio:.1f}x for {large // small}x the nodes"
    )
    assert ratio < 2 * large / small, "the probe's time grows faster than the graph"


def test_pieces_hold_at_most_their_size_and_give_the_whole_graphs_peaks(monkeypatch):
    """A graph with an If reading an outer value, cut into pieces of 2 nodes, peaks as one session does."""
    then = helper.make_graph(
        [helper.make_node("Mul", ["scaled", "two"], ["doubled"], name="double")],
        "then",
        [],
        [tensor("doubled", "n", 4)],
    )
    other = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["negated"], name="negate")], "else", [], [tensor("negated", "n", 4)]
    )
    nodes = [
        helper.make_node("Mul", ["x", "big"], ["scaled"], name="scale"),
        helper.make_node("Relu", ["x"], ["relu"], name="relu"),
        helper.make_node("Log", ["x"], ["logged"], name="log"),
        helper.make_node("If", ["flag"], ["branch"], name="choose", then_branch=then, else_branch=other),
        helper.make_node("Add", ["branch", "relu"], ["y"], name="add"),
    ]
    model = make_model(
        nodes,
        {"big": np.float32(1e5), "two": np.float32(2)},
        [tensor("x", "n", 4), tensor("flag", elem=TensorProto.BOOL)],
        [tensor("y", "n", 4)],
    )
    feeds = [{"x": rng(1).normal(size=(3, 4)).astype(np.float32), "flag": np.array(flag)} for flag in (True, False)]
    whole = fp16_overflow._overflow(model, feeds)
    made = []
    original = segments.Pieces.__init__

    def recording(self, *args, **kwargs):
        original(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(segments.Pieces, "__init__", recording)
    monkeypatch.setattr(segments, "PIECE_NODES", 2)
    cut = fp16_overflow._overflow(model, feeds)
    assert len(made[0].pieces) > 5, "the probe was cut"
    assert all(p.nodes <= 2 for p in made[0].pieces)
    assert cut[0] == whole[0] and "scale" in cut[0]
    assert cut[1].keys() == whole[1].keys()
    for name, peak in whole[1].items():
        assert cut[1][name] == pytest.approx(peak, rel=1e-6), name


def test_fp16_skips_a_graph_past_its_size_with_the_reason(monkeypatch):
    monkeypatch.setattr(fp16, "FP16_MAX_NODES", 10)
    with pytest.raises(VariantSkipped, match=r"11 nodes, more than 10: .*square of its nodes"):
        lower_precision.make_fp16(chain(11), [{"x": np.ones((2, 4), np.float32)}])
    lower_precision.make_fp16(chain(10), [{"x": np.ones((2, 4), np.float32)}])


def matmul_chain(matmuls: int) -> onnx.ModelProto:
    nodes = [
        helper.make_node(
            "MatMul", [f"v{i}" if i else "x", f"w{i}"], ["y" if i == matmuls - 1 else f"v{i + 1}"], name=f"m{i}"
        )
        for i in range(matmuls)
    ]
    weights = {f"w{i}": rng(i).normal(size=(16, 16)).astype(np.float32) for i in range(matmuls)}
    return make_model(nodes, weights, [tensor("x", "n", 16)], [tensor("y", "n", 16)])


@pytest.mark.parametrize("kind", ["dynamic", "static"])
def test_int8_skips_a_graph_too_big_for_the_quantizer_with_the_reason(monkeypatch, kind):
    model = matmul_chain(4)  # 4 MatMuls x (4 nodes + 4 initializers) = 32
    monkeypatch.setattr(int8, "INT8_MAX_WORK", 31)
    with pytest.raises(VariantSkipped, match=r"4 operators to quantize x 8 nodes and initializers = 32, more than 31"):
        lower_precision.require_quantizable(model, kind)
    monkeypatch.setattr(int8, "INT8_MAX_WORK", 32)
    lower_precision.require_quantizable(model, kind)


def test_the_variant_table_records_the_size_skips(tmp_path, run_cli, monkeypatch):
    """Through a real import: skipped, with the reason, as the table records other skips."""
    path = tmp_path / "mm.onnx"
    onnx.save(matmul_chain(40), path)
    monkeypatch.setattr(fp16, "FP16_MAX_NODES", 39)
    monkeypatch.setattr(int8, "INT8_MAX_WORK", 100)
    code, out, err = run_cli(
        "--repository",
        tmp_path / "repo",
        "import",
        path,
        "--name",
        "mm",
        "--forms",
        "none",
        "--calibration",
        _calibration(tmp_path),
    )
    assert code == 0, err
    variants = json.loads((tmp_path / "repo" / "manifest.json").read_text())["models"]["mm"]["variants"]
    assert variants["fp32"]["status"] == "ok"
    assert variants["fp16"]["status"] == "skipped" and "40 nodes, more than 39" in variants["fp16"]["reason"]
    for name in ("int8-dynamic", "int8-static"):
        record = variants[name]
        assert record["status"] == "skipped" and "too big for onnxruntime's quantizer" in record["reason"], name
    assert "more than 39" in out  # the summary table shows the reason


def _calibration(tmp_path: Path) -> Path:
    data = tmp_path / "calibration.npz"
    np.savez(data, x=rng(5).normal(size=(4, 16)).astype(np.float32))
    return data


def test_no_fallback_search_past_its_size(tmp_path, run_cli, monkeypatch):
    """x w1 - x w2 with w2 within 1e-4 of w1: fp16 rounds the weights by up to 5e-4, so the difference is
    lost (outside fp16's budget); the search would keep nodes in float, but past FALLBACK_MAX_NODES the
    variant is rejected with the reason instead."""
    w1 = rng(2).normal(size=(4, 4096)).astype(np.float32)
    w2 = (w1 * (1 + 1e-4 * rng(3).normal(size=w1.shape))).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h1"], name="first"),
        helper.make_node("MatMul", ["x", "w2"], ["h2"], name="second"),
        helper.make_node("Sub", ["h1", "h2"], ["z"], name="difference"),
    ]
    model = make_model(nodes, {"w1": w1, "w2": w2}, [tensor("x", "n", 4)], [tensor("z", "n", 4096)])
    path = tmp_path / "offset.onnx"
    onnx.save(model, path)
    monkeypatch.setattr(variant_maker, "FALLBACK_MAX_NODES", 2)
    code, _, err = run_cli(
        "--repository", tmp_path / "repo", "import", path, "--name", "offset", "--quiet", "--forms", "none"
    )
    assert code == 0, err
    fp16_record = json.loads((tmp_path / "repo" / "manifest.json").read_text())["models"]["offset"]["variants"]["fp16"]
    assert fp16_record["status"] == "rejected", fp16_record
    assert "no fallback search: the graph has 3 nodes, more than 2" in fp16_record["reason"]
    assert "fallback" not in fp16_record
    # The budget's reason is kept as data beside the words, which start with its rendering.
    assert fp16_record["reason_data"]["code"] == "max_error_above_bound", fp16_record["reason_data"]
    assert fp16_record["reason_data"]["limit"] == "serving_bound"
    assert fp16_record["reason"].startswith(reasons.render(fp16_record["reason_data"]) + "; no fallback search")
