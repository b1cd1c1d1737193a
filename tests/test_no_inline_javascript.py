"""No pytest file starts node on JavaScript source of its own: behaviour both languages share is pinned by a vector
file in tests/vectors/ that pytest and a `node --test` file under tests/js/ both read. (Running node or npm as a tool,
on files, is fine.)"""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
# node -e / --eval / -p / --print with source, or a module read from an argument or stdin (--input-type).
INLINE = re.compile(r"""(?:node\w*["']?\s*,\s*f?["'](?:-e|--eval|-p|--print)["'])|--input-type""")


def inline_javascript(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if INLINE.search(line)]


def test_no_pytest_file_passes_javascript_source_to_node():
    found = {
        str(path.relative_to(TESTS)): lines
        for path in sorted(TESTS.rglob("*.py"))
        if path != Path(__file__).resolve() and (lines := inline_javascript(path.read_text()))
    }
    assert not found, f"JavaScript source passed to node (pin it in tests/vectors/, test it in tests/js/): {found}"


def test_the_check_sees_the_ways_inline_javascript_was_passed():
    assert inline_javascript('["node", "--input-type=module", "-e", script]')
    assert inline_javascript('run = subprocess.run([node, "-e", script])')
    assert inline_javascript("subprocess.run(['node', '--eval', source])")
    assert not inline_javascript('subprocess.run(["node", "--test", str(path)])')
    assert not inline_javascript('subprocess.run(["npm", "pack", "--dry-run", "--json"])')
