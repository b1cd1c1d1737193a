"""What `onnxport import` is asked to do: every option once, in one frozen `ImportRequest`.

`ImportRequest.checked` builds it from the command line's values and checks each option before any work: the
name, every file or folder named, the description, the limits, which options go together. A refusal is a
UsageError (exit 2) naming the option, what was expected and what came. What needs the model itself
(--metric-output among its outputs, --inputs and --calibration against its signature, the pipeline spec against
its inputs, outputs and --asset files) is checked by importer.py once the file is read.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from onnxport.convert.intake import value_budget
from onnxport.convert.intake.import_budgets import ImportBudgets
from onnxport.errors import UsageError
from onnxport.repository.names import check_name
from onnxport.repository.variant_table import FORMS, NAMES

# An imported model's one line for people (the manifest's `description`, shown by info and the pages).
DESCRIPTION_MAX = 200


@dataclass(frozen=True)
class LimitSettings:
    """The import's limits are settings (import_max_nodes, import_time_limit in serving/config/, which convert
    does not import): the command line hands over each setting's rule, so that an option takes the values its
    ONNXPORT_* variable takes, and the loader of the config file and environment for the options not given."""

    rules: Mapping[str, Callable[[str], Any]]
    load: Callable[[Mapping[str, Any]], Mapping[str, Any]]


# Each limit's option and the setting it overrides.
LIMIT_OPTIONS = {
    "--max-nodes": "import_max_nodes",
    "--time-limit": "import_time_limit",
    "--memory-limit": "import_memory_limit",
    "--cpu-limit": "import_cpu_limit",
}


@dataclass(frozen=True)
class ImportRequest:
    """Every option of one import, as checked: the build key (importer.import_key) and the import
    (importer.prepare_import) read them here, and a new option is a field here and a line in `checked`."""

    path: Path  # a .onnx file, an ONNX test directory (model.onnx + test_data_set_*), a LightGBM or XGBoost file
    name: str  # the model's name in the repository (--name)
    task: str = "generic"
    metric_output: str | None = None
    inputs: Path | None = None  # golden inputs (--inputs)
    calibration: Path | None = None  # static int8 calibration inputs (--calibration)
    pipeline: Path | None = None  # the pipeline spec's file (--pipeline)
    pipeline_spec: Any = field(default=None, compare=False)  # its JSON, read by `checked`
    assets: tuple[Path, ...] = ()  # files published beside the model under their file names (--asset)
    description: str | None = None  # None: "Imported from FILE"
    forms: tuple[str, ...] = FORMS
    variants: tuple[str, ...] = NAMES
    max_nodes: int | None = None  # most nodes the graph may have; None: any
    time_limit: float | None = None  # seconds for the whole import; None or 0: no limit
    memory_limit: int | None = None  # bytes of address space of the import's child process; None or 0: no limit
    cpu_limit: float | None = None  # CPU seconds of the import's child process; None or 0: no limit
    replace: bool = False  # a model of the same name may be replaced
    # What a file may declare before its parsers run (tree counts, data bytes, text sizes): settings only.
    budgets: ImportBudgets = field(default_factory=ImportBudgets)

    @property
    def model_file(self) -> Path:
        return self.path / "model.onnx" if self.path.is_dir() else self.path

    @property
    def max_value_bytes(self) -> int | None:
        """The most bytes one value of the graph may take by its inferred shape (value_budget.py)."""
        return value_budget.budget_for(self.memory_limit)

    @property
    def test_dir(self) -> Path | None:
        """The ONNX test directory whose test_data_set_* folders are the golden data, if `path` is one."""
        return self.path if self.path.is_dir() else None

    @property
    def labelled_assets(self) -> dict[str, Path]:
        """--asset files by their file name, the label the model entry and a pipeline spec know them by."""
        return {path.name: path for path in self.assets}

    @classmethod
    def checked(cls, given: Any, settings: LimitSettings) -> ImportRequest:
        """The request from the command line's values (argparse's namespace: each option by its field's name,
        the limits still text), each option checked before any work."""
        name = check_name(given.name, "--name")  # the name becomes paths and URLs
        readable("", given.path, "file or folder")
        for option, path in (
            ("--inputs", given.inputs),
            ("--calibration", given.calibration),
            ("--pipeline", given.pipeline),
            *(("--asset", a) for a in given.assets),
        ):
            if path is not None:
                readable(option, path, "file or folder" if option in ("--inputs", "--calibration") else "file")
        description = _description(given.description)
        if given.path.is_dir() and not (given.path / "model.onnx").is_file():
            raise UsageError(f"{given.path}: a test directory must contain model.onnx")
        if given.inputs is not None and given.path.is_dir():
            raise UsageError(
                f"--inputs {given.inputs}: {given.path} is a test directory with its own "
                f"test_data_set_* golden sets; give the model file ({given.path / 'model.onnx'}) to use "
                "--inputs instead"
            )
        limits = _limits(
            {
                "--max-nodes": given.max_nodes,
                "--time-limit": given.time_limit,
                "--memory-limit": given.memory_limit,
                "--cpu-limit": given.cpu_limit,
            },
            settings,
        )
        # What a field needs of its option beyond the checks above (a parse, a file read) is done as it is set.
        return cls(
            path=given.path,
            name=name,
            task=given.task,
            metric_output=given.metric_output,
            inputs=given.inputs,
            calibration=given.calibration,
            pipeline=given.pipeline,
            pipeline_spec=_spec_json(given.pipeline),
            assets=_assets(given.assets),
            description=description,
            forms=given.forms,
            variants=given.variants,
            max_nodes=limits["import_max_nodes"],
            time_limit=limits["import_time_limit"],
            replace=given.replace,
            memory_limit=limits["import_memory_limit"],
            cpu_limit=limits["import_cpu_limit"],
            budgets=ImportBudgets.from_settings(limits),
        )


def readable(option: str, path: Path, kind: str) -> None:
    """A file or folder named on the command line exists, is of the expected kind and can be read: checked
    before any work, and a usage error (exit 2) naming it otherwise. The other commands' files and folders
    (build --recipes, check --tolerances) are checked by it too."""
    named = f"{option} {path}" if option else str(path)
    if not path.exists():
        what = {"file": "no such file", "folder": "no such folder"}.get(kind, "no such file or folder")
        raise UsageError(f"{named}: {what}")
    if kind == "file" and not path.is_file():
        raise UsageError(f"{named}: is a folder; expected a file")
    if kind == "folder" and not path.is_dir():
        raise UsageError(f"{named}: is a file; expected a folder")
    if not os.access(path, os.R_OK | (os.X_OK if path.is_dir() else 0)):
        raise UsageError(f"{named}: not readable by this user")


def _description(text: str | None) -> str | None:
    """--description: one line of at most DESCRIPTION_MAX characters, printable."""
    if text is None:
        return None
    shown = text if len(text) <= 60 else text[:57] + "..."
    if not text.strip():
        raise UsageError("--description is empty; expected one line for people, e.g. 'Saliency map of a photo'")
    if any(not c.isprintable() for c in text):
        bad = next(c for c in text if not c.isprintable())
        raise UsageError(f"--description {shown!r}: has {bad!r}, which is not printable; expected one line of text")
    if len(text.strip()) > DESCRIPTION_MAX:
        raise UsageError(
            f"--description {shown!r}: {len(text.strip())} characters, more than {DESCRIPTION_MAX}; "
            "expected one line (the manifest's `description`; say more in your own docs)"
        )
    return text.strip()


def _limits(texts: dict[str, str | None], settings: LimitSettings) -> Mapping[str, Any]:
    """The limits: each option given, parsed by its setting's rule; else the config file's or ONNXPORT_*'s."""
    overrides = {}
    for option, text in texts.items():
        if text is not None:
            setting = LIMIT_OPTIONS[option]
            try:
                overrides[setting] = settings.rules[setting](text)
            except ValueError as exc:
                raise UsageError(f"{option} {text!r}: {exc}") from exc
    return settings.load(overrides)


def _assets(paths: list[Path]) -> tuple[Path, ...]:
    """--asset files, each under its own file name (the label the manifest publishes it under)."""
    seen: dict[str, Path] = {}
    for path in paths:
        if path.name in seen:
            raise UsageError(
                f"--asset {path}: another --asset ({seen[path.name]}) has the same file name "
                f"{path.name!r}, the label the manifest publishes it under"
            )
        seen[path.name] = path
    return tuple(paths)


def _spec_json(path: Path | None) -> Any:
    """--pipeline's JSON; what it says is checked against the model by the importer."""
    if path is None:
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"--pipeline {path}: not a JSON file ({exc})") from None
