"""The suite's fixtures live in tests/fixtures/; this file loads them and runs every test in its own folder."""

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
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        for marker in sorted({m for f, m in MARKERS_BY_FIXTURE.items() if f in item.fixturenames}):
            item.add_marker(marker)
    if config.pluginmanager.hasplugin("xdist") and config.getoption("dist", "no") != "no":
        share_between_workers(items)


# `make test` runs pytest-xdist's two workers with --dist loadgroup: a group goes to one worker whole.
# A module is a group (its module-scoped fixtures are built once), and the modules that start a Ray
# cluster are one group (one cluster at a time). The longest groups start first, so that neither
# worker is left with a long one at the end.
FIRST = ("slow", "browser", "ray", "demo")


def share_between_workers(items) -> None:
    for item in items:
        module = item.nodeid.split("::")[0]
        ray = item.get_closest_marker("ray") or module.rsplit("/", 1)[-1].startswith("test_ray")
        item.add_marker(pytest.mark.xdist_group("ray" if ray else module))
    # Whole groups move, so that a module's tests stay together (pytest rebuilds its module fixtures otherwise).
    rank = {marker: index for index, marker in enumerate(FIRST)}
    group_rank: dict[str, int] = {}
    for item in items:
        group = item.get_closest_marker("xdist_group").args[0]
        item_rank = min((rank[m.name] for m in item.iter_markers() if m.name in rank), default=len(FIRST))
        group_rank[group] = min(group_rank.get(group, item_rank), item_rank)
    items.sort(key=lambda item: group_rank[item.get_closest_marker("xdist_group").args[0]])


@pytest.fixture(autouse=True)
def _work_in_tmp(tmp_path, monkeypatch):
    # onnxruntime's symbolic shape inference drops temporary files into the working folder.
    monkeypatch.chdir(tmp_path)
