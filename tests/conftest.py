"""The suite's fixtures live in tests/fixtures/; this file loads them and runs every test in its own folder."""

import os

import pytest

# Before the plugins are imported: their asserts (and the helper modules' beside them) get pytest's messages.
pytest.register_assert_rewrite("fixtures")

pytest_plugins = [
    "fixtures.recipes",  # TINY_RECIPE, run_cli, recipes_dir, write_recipe
    "fixtures.errors",  # assert_one_line_error, assert_json_error
    # demo_repository, demo_manifest, golden_inputs, reference_outputs, repository_copy, replace_manifest, served
    "fixtures.repository",
    "fixtures.servers",  # live_server, spawn_server, serve_repository (and buffered_client for tests to import)
    "fixtures.v2",  # v2_codec
    "fixtures.browser",  # playwright_session, chromium, chromium_webgpu, open_tab
    "fixtures.check",  # check_cli (and the check report readers for tests to import)
    "fixtures.apps",  # demo_app
    "fixtures.cors",  # clean_environment, cors_web_root, cors_client, iris_fp32_artifact (and the origins)
    "fixtures.tiny_decoder",  # tiny_decoder (and tiny_decoder_folder, tiny_llama for tests to import)
]


# What a test uses puts it in or out of `make check`, the fast loop: a test whose fixtures (directly or
# through others) build or read the demo repository, start Chromium or start Ray gets that marker here, so
# `pytest -m "not (demo or browser or ray or slow)"` runs only what needs none of them. `slow` is set by
# hand, on tests that take minutes of their own (the third-party corpus, demo recipes built outside the
# demo repository).
MARKERS_BY_FIXTURE = {
    "demo_repository": "demo",  # every demo model built through the CLI, once per session (minutes)
    "playwright_session": "browser",  # chromium, chromium_webgpu, open_tab
    "check_cli": "browser",  # `onnxport check` drives Chromium itself
    "ray_server": "ray",  # tests/serving/test_ray.py: a local Ray cluster with two replicas
    "ray_generation_server": "ray",  # tests/serving/generate/test_generate_ray.py: one replica, the tiny decoder
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        for marker in sorted({m for f, m in MARKERS_BY_FIXTURE.items() if f in item.fixturenames}):
            item.add_marker(marker)
        if item.nodeid.split("::", 1)[0] in APART_MODULES:
            item.add_marker("apart")
    if os.environ.get("PYTEST_XDIST_WORKER"):
        start_longest_first(items)


# `make test` runs pytest twice (docs/development.md#tests): every test not marked apart on two pytest-xdist
# workers, then the apart ones, their two modules side by side (one a worker) with nothing else: the modules whose
# figures or timeouts assume at most one other process busy. Beside the whole suite, the bench's Ray throughput
# table took 523 s against 90 (its rows were sized from the model's time then, not from the rate the row before
# measured), and a Firefox row of the wheel's README check timed out. Beside each other only, both pass: 147 s for
# the two (the bench's about 120 s, the wheel's 128 s), where one after the other took 236 s. The modules that
# start a Ray cluster are one group (one cluster at a time, on one worker).
RAY_MODULES = {
    "tests/serving/test_ray.py",
    "tests/serving/test_ray_operations.py",
    "tests/serving/generate/test_generate_ray.py",
    "tests/bench/test_bench.py",
}
APART_MODULES = {"tests/bench/test_bench.py", "tests/package/test_wheel.py"}

# Under xdist the longest groups start first (longest processing time first), so that neither worker is left
# with a long one at the end: seconds a group took in one process on 2 cores (the slowest of `make test`'s
# --durations at 21093c9, summed by group). Groups not listed follow, those holding slow, browser, Ray or demo
# tests first, in that order.
SECONDS = {
    "tests/convert/test_corpus.py": 330,
    "tests/check/test_check_matrix.py": 50,  # without --full-webgpu since, measured alone
    "tests/convert/decoder/test_smollm2_repository.py": 120,  # measured beside other tests, not at 21093c9
    "tests/check/test_check_engines.py": 95,
    "tests/serving/test_fuzz.py": 85,
    "ray": 80,
    "tests/bench/test_bench_engines.py": 60,
    "tests/check/test_check_software_webgpu.py": 46,
    "tests/serving/v2/test_openapi.py": 40,
    "tests/check/test_check_failures.py": 35,
}
FIRST = ("slow", "browser", "ray", "demo")


def group_of(nodeid: str) -> str:
    module = nodeid.split("::", 1)[0]
    return "ray" if module in RAY_MODULES else module


def start_longest_first(items) -> None:
    """Reorders whole groups (each worker collects the same order; the scheduler keeps it)."""
    rank = {marker: index for index, marker in enumerate(FIRST)}
    group_rank: dict[str, int] = {}
    for item in items:
        item_rank = min((rank[m.name] for m in item.iter_markers() if m.name in rank), default=len(FIRST))
        group = group_of(item.nodeid)
        group_rank[group] = min(group_rank.get(group, item_rank), item_rank)
    items.sort(key=lambda item: (-SECONDS.get(group_of(item.nodeid), 0), group_rank[group_of(item.nodeid)]))


@pytest.hookimpl(optionalhook=True)  # without xdist (`-p no:xdist`) the hook does not exist
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    # xdist would reorder the groups by their number of tests (--loadscope-reorder, its default); the order is ours.
    config.option.loadscopereorder = False

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    return GroupScheduling(config, log)


@pytest.fixture(autouse=True)
def _work_in_tmp(tmp_path, monkeypatch):
    # onnxruntime's symbolic shape inference drops temporary files into the working folder.
    monkeypatch.chdir(tmp_path)
