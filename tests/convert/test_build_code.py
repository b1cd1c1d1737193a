"""The build key's code part covers every module that decides what a build writes, family folders included."""

from __future__ import annotations

from pathlib import Path

from onnxport.convert.intake import sources

PACKAGE = Path(sources.__file__).resolve().parents[2]


def test_the_build_code_digest_reads_every_build_module():
    read = {p.relative_to(PACKAGE).as_posix() for pattern in sources.BUILD_CODE for p in PACKAGE.glob(pattern)}
    for module in (
        "convert/model_build.py",
        "convert/fp16/plan.py",
        "convert/int8/prep.py",
        "convert/intake/importer.py",
        "convert/forms/tree_tensors.py",
        "accuracy/judgement.py",
        "repository/manifest.py",
        "dtypes.py",
    ):
        assert module in read, module
    assert not any(name.startswith(("serving/", "check/", "cli/")) for name in read)


def test_a_change_in_a_family_folder_changes_the_digest(monkeypatch, tmp_path):
    before = sources.build_code_sha256()
    copy = tmp_path / "onnxport"
    for pattern in sources.BUILD_CODE:
        for path in PACKAGE.glob(pattern):
            target = copy / path.relative_to(PACKAGE)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    fake = copy / "convert" / "intake" / "sources.py"  # the digest walks up from this module's own file
    monkeypatch.setattr(sources, "__file__", str(fake))
    assert sources.build_code_sha256() == before
    (copy / "convert" / "fp16" / "plan.py").write_text("# changed\n", encoding="utf-8")
    assert sources.build_code_sha256() != before
