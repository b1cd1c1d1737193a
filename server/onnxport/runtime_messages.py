"""onnxruntime's error messages, read: the node it names, that node's operator, and its reason on one line.

onnxruntime 1.30 wraps a kernel's refusal in codes and source positions, and some reasons span lines:

    [ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running Resize node.
    Name:'/backbone/embeddings/Resize' Status Message: upsamplebase.h:579 ScalesValidation 'Cubic' mode
    only supports:
      * 2-D inputs ('Bicubic') or
      * 4-D inputs with the corresponding outermost 2 scale values being 1 or ... (three more clauses)
    in the Resize operator

A variant's reason names the node, its operator and the reason ("'Cubic' mode only supports: 2-D inputs
('Bicubic') or 4-D inputs with ..."); the whole message is kept beside it, as the variant's detail.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

REASON_CHARS = 160  # the reason's length at most, cut at a word: the whole message is kept beside it

_CODE = re.compile(r"^\s*\[ONNXRuntimeError\] : \d+ : \w+ : ")
_LOAD_FROM = re.compile(r"^Load model from .*? failed:", re.DOTALL)
_RUNNING = re.compile(
    r"Non-zero status code returned while running (\w+) node\. Name:'([^']*)' Status Message: ", re.DOTALL
)
_NO_KERNEL = re.compile(r"Could not find an implementation for (\w+)\(\d+\) node with name '([^']*)'")
_NODE_OP = re.compile(r"^Node \(([^)]*)\) Op \((\w+)\) ")
_OF_NODE = re.compile(r"(?:of|in) node \(([^)]*)\)")
_OF_OPERATOR = re.compile(r"of operator \((\w+)\)")
# A kernel's check: its source position, then its function ("ScalesValidation", "Compute") or its whole
# signature and the condition that failed ("... input_shape_size == requested_shape_size was false. ").
_POSITION = re.compile(r"^\S+\.(?:h|cc|cpp|c):\d+ ")
_WAS_FALSE = re.compile(r"^.*? was false\. ", re.DOTALL)
_FUNCTION = re.compile(r"^[\w:~]+ ")


@dataclass(frozen=True)
class Refusal:
    node: str | None  # the node's name, when the message gives it
    operator: str | None
    reason: str  # onnxruntime's reason, on one line, at most REASON_CHARS


def read(message: str) -> Refusal:
    """What onnxruntime's `message` (as it raised it, lines and all) says."""
    text = _LOAD_FROM.sub("", _CODE.sub("", message.strip())).strip()
    node = operator = None
    if running := _RUNNING.search(text):
        operator, node = running.group(1), running.group(2)
        text = _kernel_reason(text[running.end() :])
    elif missing := _NO_KERNEL.search(text):
        operator, node = missing.group(1), missing.group(2)
    else:
        if named := _NODE_OP.match(text):
            node, operator = named.group(1), named.group(2)
            text = text[named.end() :]
        else:
            node = _first(_OF_NODE, text)
            operator = _first(_OF_OPERATOR, text)
    return Refusal(node or None, operator, _one_line(text))


def _kernel_reason(text: str) -> str:
    if not _POSITION.match(text):
        return text
    text = _POSITION.sub("", text)
    if was_false := _WAS_FALSE.match(text):
        return text[was_false.end() :]
    return _FUNCTION.sub("", text, count=1)


def _first(pattern: re.Pattern, text: str) -> str | None:
    found = pattern.search(text)
    return found.group(1) if found else None


def _one_line(text: str) -> str:
    """The first line; one that announces a list (ends with ":") goes on with the list's items."""
    lines = [line.strip().removeprefix("* ").strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[0]
    if line.endswith(":"):
        line = " ".join(lines)
    line = " ".join(line.split())
    if len(line) <= REASON_CHARS:
        return line
    return line[: REASON_CHARS - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def where(refusal: Refusal) -> str:
    """ "Resize node /backbone/embeddings/Resize: " or "Resize: ", or nothing when no node or operator is named."""
    if refusal.node and refusal.operator:
        return f"{refusal.operator} node {refusal.node}: "
    if refusal.node or refusal.operator:
        return f"{refusal.node or refusal.operator}: "
    return ""
