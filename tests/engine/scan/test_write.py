"""Decision values written into a person's file: the key's own lines replaced, a
commented-out key set below its comment, everything else kept; values typed."""

from __future__ import annotations

import json

import pytest
from dreamlake.engine.scan import write as dw
from dreamlake.engine.scan.tfvars import decode
from dreamlake.engine.settings import hcl


@pytest.mark.parametrize(
    ("raw", "kind", "want"),
    [
        ("3", "number", 3),
        ("2.5", "number", 2.5),
        ("three", "number", "three"),  # left as text: the scan says why it is wrong
        ("TRUE", "bool", True),
        ("a,b", "list", ["a", "b"]),
        ('["a"]', "list", ["a"]),
        ('{"k": 1}', "json", {"k": 1}),
        ("x=y", "string", "x=y"),
        ("[" * 5000, "any", "[" * 5000),  # too deep to read as JSON: text
        (7, "string", 7),  # a value given typed (over MCP) stays as given
    ],
)
def test_values_are_read_as_their_declared_type(raw: object, kind: dw.Kind, want: object) -> None:
    assert dw.coerce(raw, kind) == want


def test_kinds_from_terraform_types_and_config_models() -> None:
    assert dw.tf_kind("list(string)") == "list"
    assert dw.tf_kind("map(string)") == "json"
    assert dw.tf_kind(None) == "any"
    assert dw.model_kind(int) == "number"
    assert dw.model_kind(list[str]) == "list"
    assert dw.model_kind(str | None) == "string"


@pytest.mark.parametrize(
    "value", ["plain", 'q"uote\\back\nline', "${var.x} %{if}", 3, 1.5, True, ["a", 1], {"k": "v"}]
)
def test_hcl_literals_read_back_as_the_same_value(value: object) -> None:
    text = f"x = {dw.hcl_literal(value)}\n"
    assert decode(hcl.loads(text)["x"]) == value


TFVARS = """\
# Decisions. Read ADAPT.md.

# Where the work goes.
# workdir = "/var/lib/nymph"

queues = [
  "default",
]
worker_name = "CHANGE-ME"  # the name people see
"""


def test_tfvars_edits_keep_the_rest_of_the_file() -> None:
    text = dw.set_tfvars(TFVARS, "workdir", "/srv")
    text = dw.set_tfvars(text, "queues", ["gpu"])
    text = dw.set_tfvars(text, "worker_name", "box-1")
    text = dw.set_tfvars(text, "region", "eu")
    assert text == (
        "# Decisions. Read ADAPT.md.\n\n# Where the work goes.\n"
        '# workdir = "/var/lib/nymph"\nworkdir = "/srv"\n\n'
        'queues = ["gpu"]\n'
        'worker_name = "box-1"  # the name people see\n'
        'region = "eu"\n'
    )


STACK = """\
# the stack's settings
config:
  lab:workdir: /old
  lab:queues:
    - default

  # lab:worker_name: someone
  other:key: 1
"""


def test_stack_file_edits_keep_the_rest_of_the_file() -> None:
    import yaml

    text = dw.set_stack_yaml(STACK, "lab", "workdir", "/srv")
    text = dw.set_stack_yaml(text, "lab", "queues", ["a", "b"])
    text = dw.set_stack_yaml(text, "lab", "worker_name", "w1")
    text = dw.set_stack_yaml(text, "lab", "new", 3)
    assert text.startswith("# the stack's settings\nconfig:\n")
    assert '  # lab:worker_name: someone\n  lab:worker_name: "w1"\n' in text
    assert yaml.safe_load(text)["config"] == {
        "lab:new": 3,
        "lab:workdir": "/srv",
        "lab:queues": ["a", "b"],
        "lab:worker_name": "w1",
        "other:key": 1,
    }
    assert dw.set_stack_yaml("config: {}\n", "lab", "k", "v") == 'config:\n  lab:k: "v"\n'


def test_adopt_edits_keep_the_other_keys_in_order() -> None:
    text = dw.set_adopt('{"host": null, "port": 22, "queues": null}', "host", "box")
    assert list(json.loads(text)) == ["host", "port", "queues"]
    assert json.loads(text)["host"] == "box"
