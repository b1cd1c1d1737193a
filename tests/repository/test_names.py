"""repository/names.py: the one name rule, and the check that a written path stays inside its folder."""

from __future__ import annotations

import os

import pytest

from onnxport.errors import RepositoryError, UsageError
from onnxport.repository import batch_axis
from onnxport.repository.names import EXAMPLE, RULE, check_name, check_stored_name, inside, is_valid

# Each with the reason the message must give.
BAD_NAMES = [
    ("../evil", "'..'"),
    ("Bad/Name", "'/'"),
    ("", "empty"),
    ("has space", "' '"),
    ("UPPER", "'E'"),
    ("..", "'..'"),
    (".", "starts with '.'"),
    (".hidden", "starts with '.'"),
    ("-flag", "starts with '-'"),
    ("_private", "starts with '_'"),
    ("a..b", "'..'"),
    ("a/../b", "'/'"),
    ("back\\slash", "'\\\\'"),
    ("tab\there", "'\\t'"),
    ("line\n", "'\\n'"),
    ("caf\u00e9", "'\u00e9'"),
    ("percent%2f", "'%'"),
    ("x" * 65, "65 characters"),
]
GOOD_NAMES = ["iris", "digits", "minilm", "a", "0", "resnet50-v1.5", "my_model", "x" * 64, "v2.0-int8_static"]


@pytest.mark.parametrize("name, reason", BAD_NAMES)
def test_each_bad_name_is_refused_with_the_name_the_rule_and_an_example(name, reason):
    assert not is_valid(name)
    with pytest.raises(UsageError) as caught:
        check_name(name)
    message = str(caught.value)
    assert repr(name) in message and reason in message and RULE in message and repr(EXAMPLE) in message
    assert "\n" not in message.replace(repr(name), ""), "one line (the name itself is shown by repr)"


@pytest.mark.parametrize("name", GOOD_NAMES)
def test_good_names_pass_unchanged(name):
    assert is_valid(name)
    assert check_name(name) == name


def test_the_example_keeps_the_rule():
    assert check_name(EXAMPLE) == EXAMPLE


def test_what_names_the_input():
    with pytest.raises(UsageError, match="^--name 'Bad' "):
        check_name("Bad", what="--name")


def test_a_stored_bad_name_is_a_repository_error_saying_how_to_remove_it():
    with pytest.raises(RepositoryError) as caught:
        check_stored_name("../evil", "models/.repository/manifest.json")
    assert "manifest.json" in str(caught.value) and "onnxport remove '../evil'" in str(caught.value)
    assert check_stored_name("iris", "manifest.json") == "iris"
    with pytest.raises(RepositoryError, match="variant name"):
        check_stored_name("../x", "manifest.json", what="variant")


def test_inside_accepts_descendants_only(tmp_path):
    root = tmp_path / "out"
    root.mkdir()
    assert inside(root, root / "iris" / "config.pbtxt") == root / "iris" / "config.pbtxt"
    for escaping in (root / ".." / "evil", root / "", root / "a" / ".." / "..", tmp_path / "elsewhere"):
        with pytest.raises(RepositoryError, match="not inside"):
            inside(root, escaping)


def test_inside_follows_symbolic_links(tmp_path):
    root = tmp_path / "out"
    root.mkdir()
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", root / "link")
    with pytest.raises(RepositoryError, match="not inside"):
        inside(root, root / "link" / "model.onnx")


@pytest.mark.parametrize(
    "dim_param, shared",
    [
        ("batch", "batch"),
        ("sequence_length", "sequence_length"),
        ("N", "N"),
        ("unk__12", None),
        ("?", None),
        ("None", None),
        ("", None),
        ("batch size", None),
        ("-1", None),
    ],
)
def test_one_rule_tells_a_named_dimension_from_a_placeholder(dim_param, shared):
    """The server's request check, batch-axis detection and --data checks all read dim_params this way."""
    assert batch_axis.shared_dimension(dim_param) == shared
