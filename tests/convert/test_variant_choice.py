"""`--variants`: a build or an import makes only the variants asked for (fp32 always), lists the others as skipped
with why, and is another build than one with all of them; an unknown name is a usage error."""

from __future__ import annotations

from name_models import manifest_of, matmul_file

SKIPPED = "not asked for (--variants fp32,fp16)"


def _statuses(entry: dict) -> dict[str, tuple[str, str | None]]:
    return {name: (v["status"], v.get("reason")) for name, v in entry["variants"].items()}


def test_an_import_makes_the_variants_asked_for_and_says_why_the_others_are_missing(run_cli, tmp_path):
    repository = tmp_path / "repository"
    model = matmul_file(tmp_path / "models")
    code, _, err = run_cli(
        "--repository", repository, "import", model, "--name", "mm", "--quiet", "--forms", "none", "--variants", "fp16"
    )
    assert code == 0, err
    statuses = _statuses(manifest_of(repository)["models"]["mm"])
    # fp16 is made and judged (this 8x4 matmul's is not smaller, so it is skipped for that reason, not this one).
    assert statuses["fp32"][0] == "ok" and statuses["fp16"][1] != SKIPPED, statuses
    assert statuses["int8-dynamic"] == statuses["int8-static"] == ("skipped", SKIPPED), statuses

    # The same import with every variant is another build: without --replace it is refused, with it made.
    code, _, err = run_cli("--repository", repository, "import", model, "--name", "mm", "--quiet", "--forms", "none")
    assert code == 2 and "--replace" in err, err
    code, _, err = run_cli(
        "--repository", repository, "import", model, "--name", "mm", "--quiet", "--forms", "none", "--replace"
    )
    assert code == 0, err
    assert SKIPPED not in str(manifest_of(repository)["models"]["mm"]["variants"]), "every variant is made now"


def test_a_build_makes_the_variants_asked_for(run_cli, recipes_dir, tmp_path):
    repository = tmp_path / "repository"
    code, _, err = run_cli(
        "--repository",
        repository,
        "build",
        "--recipes",
        recipes_dir,
        "--quiet",
        "--forms",
        "none",
        "--variants",
        "fp32,fp16",
    )
    assert code == 0, err
    statuses = _statuses(manifest_of(repository)["models"]["tiny"])
    assert sorted(name for name, (status, _) in statuses.items() if status == "skipped") == [
        "int4",
        "int8-dynamic",
        "int8-static",
        "int8-weights",
    ]
    assert statuses["int8-static"][1] == SKIPPED


def test_an_unknown_variant_is_a_usage_error_naming_the_known_ones(run_cli, tmp_path):
    code, _, err = run_cli(
        "--repository",
        tmp_path / "r",
        "import",
        matmul_file(tmp_path / "models"),
        "--name",
        "mm",
        "--variants",
        "fp32,int2",
    )
    assert code == 2
    known = "fp32, fp16, int8-dynamic, int8-static, int8-weights, int4"
    assert f"unknown variant 'int2'; variants: {known}, or all" in err, err
