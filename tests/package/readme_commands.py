"""What a README tells a user to type and to open: its fenced shell commands and its links, as written."""

from __future__ import annotations

import re

# A fenced block marked as shell (or unmarked): ```sh ... ```.
FENCED = re.compile(r"^```(?:sh|shell|bash|console)?[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
LINK = re.compile(r"<(https?://[^>\s]+)>")


def commands(text: str) -> list[str]:
    """Every command line of the fenced shell blocks, in order, each as written (its trailing comment too)."""
    return [
        line.strip()
        for block in FENCED.findall(text)
        for line in block.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]


def links(text: str) -> list[str]:
    """Every <http...> link of the prose, in order."""
    return LINK.findall(FENCED.sub("", text))
