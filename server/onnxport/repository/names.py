"""The one rule for model names, and the one check that a written path stays inside its folder.

A model's name becomes a folder (Triton and KServe exports), a URL path segment (`/v2/models/NAME`,
the browser's cache keys) and a key of the manifest. So one rule holds everywhere a name enters
(`import --name`, recipe files, the repository's store) and everywhere a stored name leaves
(exports, the server's catalog, bench): lower-case letters, digits, `.`, `_` and `-`, starting with a
letter or digit, at most 64 characters. It leaves nothing to quote or escape: no `/`, no `..`, no
space, no upper case (file systems and URLs disagree about case), no empty name.
"""

from __future__ import annotations

import re
from pathlib import Path

from onnxport.errors import RepositoryError, UsageError
from onnxport.repository.manifest import Manifest, ModelEntry

RULE = r"^[a-z0-9][a-z0-9._-]{0,63}$"
RULE_TEXT = (
    f"a name is 1 to 64 lower-case letters, digits, '.', '_' or '-', starting with a letter or digit ({RULE}, no '..')"
)
EXAMPLE = "resnet50-v1.5"
_PATTERN = re.compile(RULE)


def name_problem(name: object) -> str | None:
    """None when `name` keeps the rule, else what is wrong with it (a few words)."""
    if not isinstance(name, str):
        return f"not a string but {type(name).__name__}"
    if name == "":
        return "empty"
    if len(name) > 64:
        return f"{len(name)} characters, more than 64"
    problems = []
    bad = sorted({c for c in name if not re.fullmatch(r"[a-z0-9._-]", c)})
    if bad:
        problems.append("it contains " + ", ".join(repr(c) for c in bad))
    if ".." in name:
        problems.append("it contains '..'")
    if not problems and not _PATTERN.fullmatch(name):
        problems.append(f"it starts with {name[0]!r}")
    if problems:
        return "; ".join(problems)
    return None


def is_valid(name: object) -> bool:
    return name_problem(name) is None


def check_name(name: str, what: str = "model name") -> str:
    """`name` when it keeps the rule; else a UsageError (exit 2) showing it, the rule and an example."""
    problem = name_problem(name)
    if problem is not None:
        raise UsageError(f"{what} {name!r} is not allowed ({problem}): {RULE_TEXT}; for example {EXAMPLE!r}")
    return name


def check_stored_name(name: str, source: object, what: str = "model", fix: str | None = None) -> str:
    """`name` when it keeps the rule; else a RepositoryError for a name in a manifest (an older
    onnxport's, or a hand-edited one) naming `source`, with `fix` (default: how to remove the model)."""
    problem = name_problem(name)
    if problem is not None:
        if fix is None:
            fix = (
                f"remove it with `onnxport remove {name!r}` and import or build it again under a valid name"
                if what == "model"
                else "rebuild the model"
            )
        raise RepositoryError(f"{source}: {what} name {name!r} breaks the name rule ({problem}): {RULE_TEXT}; {fix}")
    return name


def inside(root: Path, path: Path, doing: str = "write") -> Path:
    """`path` if it lies strictly inside `root` (after resolving `..` and symbolic links), else a
    RepositoryError: every writer passes each path it builds from a name through here."""
    base = Path(root).resolve()
    resolved = Path(path).resolve()
    if resolved == base or not resolved.is_relative_to(base):
        raise RepositoryError(
            f"refusing to {doing} {path}: it is not inside {root} (names must not be paths: {RULE_TEXT})"
        )
    return Path(path)


def described(entry: ModelEntry) -> str:
    """What kind of model a manifest entry is, in a few words, for messages about replacing it."""
    provenance = entry.get("provenance") or {}
    task = entry.get("task") or "generic"
    if entry.get("kind") == "onnx":
        return f"a {task} model imported from {provenance.get('import_path') or 'an ONNX file'}"
    return f"a {task} model built from the recipe {provenance.get('recipe') or '(unknown)'} ({entry.get('kind')})"


def check_import_target(manifest: Manifest, name: str, build_key: str, replace: bool) -> None:
    """An import may write `name` when it is free, when `replace` says so, or when the same import
    (same build key: same files and settings) is already there, which then changes nothing."""
    entry = manifest["models"].get(name)
    if entry is None or replace or entry.get("build_key") == build_key:
        return
    raise UsageError(
        f"model {name!r} is already in the repository: {described(entry)}; "
        f"`--replace` replaces it, or choose another --name"
    )


def check_recipe_targets(manifest: Manifest, names: list[str], replace: bool) -> None:
    """A recipe build rebuilds what recipes built, but replaces an imported model of the same name only
    with `replace`: a recipe in the folder must not silently take the place of a user's import."""
    if replace:
        return
    taken = [
        (n, manifest["models"][n])
        for n in names
        if n in manifest["models"] and manifest["models"][n].get("kind") == "onnx"
    ]
    if taken:
        what = "; ".join(f"{n!r} is {described(entry)}" for n, entry in taken)
        raise UsageError(
            f"the build would replace imported models: {what}; `onnxport build --replace` replaces "
            f"them, or `onnxport remove` them first"
        )
