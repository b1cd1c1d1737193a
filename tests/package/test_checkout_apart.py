"""The wheel holds the product, not the checkout's tools: no module of the package builds a path into the
checkout's tests/ or scripts/, or imports the tests' helpers (tests/fixtures/). Helpers only tests and scripts
use live there, outside the wheel."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "server" / "onnxport"
CHECKOUT_ONLY = ("tests", "scripts")
TEST_HELPERS = ("fixtures",)


def _docstrings(tree: ast.AST) -> set[int]:
    owners = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, owners)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def reaches_into_the_checkout(source: str) -> list[str]:
    """What in source names the checkout's tests/ or scripts/ as a path, or imports a test helper."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Div)
            and isinstance(node.right, ast.Constant)
            and node.right.value in CHECKOUT_ONLY
        ):
            found.append((node.lineno, f'/ "{node.right.value}"'))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and node.value.startswith(tuple(f"{folder}/" for folder in CHECKOUT_ONLY))
        ):
            found.append((node.lineno, repr(node.value)))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            found += [(node.lineno, f"import {n}") for n in names if n.split(".")[0] in TEST_HELPERS]
    return [f"line {line}: {what}" for line, what in sorted(found)]


def test_the_rule_sees_a_path_into_tests_and_an_import_of_a_helper():
    assert reaches_into_the_checkout('CORPUS = ROOT / "tests" / "data"\nfrom fixtures import corpus_rows\n') == [
        'line 1: / "tests"',
        "line 2: import fixtures",
    ]
    assert reaches_into_the_checkout('"""Made by scripts/generate/js_dtypes.py."""\nNAME = "tests"\n') == []


def test_no_module_of_the_package_reaches_into_the_checkouts_tests_or_scripts():
    offenders = {
        str(path.relative_to(PACKAGE)): found
        for path in sorted(PACKAGE.rglob("*.py"))
        if (found := reaches_into_the_checkout(path.read_text()))
    }
    assert not offenders, f"test helpers and tools belong in tests/ and scripts/, not the wheel: {offenders}"
