"""The state reader, on every tfstate in the shared fixtures."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform.statefile import (
    cloud_providers,
    read_state,
    state_fingerprint,
)


@pytest.mark.parametrize(
    ("name", "resources", "outputs", "serial"),
    [
        ("empty-resources-with-output.v1.16.0.tfstate", 0, {"test": "test"}, 1),
        ("modules-two-resources.tfstate", 2, {"test": "baz"}, 8),
        ("null_resource.v1.3.0.tfstate", 1, {}, 2),
        ("terraform_data-with-output.v1.15.0.tfstate", 1, {"greeting": "hello world"}, 1),
    ],
)
def test_fixture_states(
    fixtures: Path, name: str, resources: int, outputs: dict, serial: int
) -> None:
    s = read_state(fixtures / "tfstate" / name)
    assert s.exists and s.readable and not s.empty
    assert (s.resources, s.outputs, s.serial) == (resources, outputs, serial)
    assert s.present  # outputs alone count: the local template has only outputs
    assert s.lineage


def test_missing_empty_and_broken(tmp_path: Path, fixtures: Path) -> None:
    assert not read_state(tmp_path / "none").exists
    empty = read_state(fixtures / "generated-locally/crash-first-apply/terraform.tfstate")
    assert empty.exists and empty.empty and not empty.present
    bad = tmp_path / "bad.tfstate"
    bad.write_text("{ half")
    b = read_state(bad)
    assert not b.readable and b.error and "not valid JSON" in b.error


def test_sensitive_outputs_are_never_returned(tmp_path: Path) -> None:
    p = tmp_path / "terraform.tfstate"
    p.write_text(
        '{"version":4,"serial":1,"lineage":"x","outputs":{"pw":{"value":"s3cret","type":"string","sensitive":true},"a":{"value":1,"type":"number"}},"resources":[]}'
    )
    s = read_state(p)
    assert s.outputs == {"a": 1} and s.sensitive_outputs == ("pw",) and s.present


def test_fingerprint_treats_empty_as_absent(tmp_path: Path, fixtures: Path) -> None:
    assert state_fingerprint(tmp_path / "nope") == "absent"
    assert (
        state_fingerprint(fixtures / "generated-locally/crash-first-apply/terraform.tfstate")
        == "absent"
    )
    p = tmp_path / "s.tfstate"
    shutil.copy(fixtures / "tfstate/null_resource.v1.3.0.tfstate", p)
    assert state_fingerprint(p).startswith("sha256:")


def test_cloud_providers(fixtures: Path) -> None:
    assert (
        cloud_providers(read_state(fixtures / "tfstate/terraform_data-with-output.v1.15.0.tfstate"))
        == ()
    )
    assert cloud_providers(read_state(fixtures / "tfstate/null_resource.v1.3.0.tfstate")) == ()
    assert cloud_providers(read_state(fixtures / "tfstate/modules-two-resources.tfstate")) == (
        'provider["registry.terraform.io/hashicorp/test"]',
    )
