"""The state reader, on every tfstate fixture (the project's own, and the upstream
corpus when present)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform.statefile import (
    cloud_providers,
    read_state,
    state_fingerprint,
)
from shared_fixtures import OWN_TF, UPSTREAM_TF, cases, own_manifest


@pytest.mark.parametrize(
    ("root", "name", "resources", "outputs", "serial"),
    cases(
        own=[
            # the serial depends on how often terraform persisted during the apply
            ("lifecycle.tfstate", 2, {"label": "one"}, None),
            ("modules-two-resources.tfstate", 2, {"test": "baz"}, None),
            ("outputs-only.tfstate", 0, {"test": "test"}, None),
            # the ec2 template on a local AWS API, where a provider mirror made it
            *([("ec2.local-aws-api.tfstate", 2, None, None)] if own_manifest()["ec2"] else []),
        ],
        upstream=[
            ("empty-resources-with-output.v1.16.0.tfstate", 0, {"test": "test"}, 1),
            ("modules-two-resources.tfstate", 2, {"test": "baz"}, 8),
            ("null_resource.v1.3.0.tfstate", 1, {}, 2),
            ("terraform_data-with-output.v1.15.0.tfstate", 1, {"greeting": "hello world"}, 1),
        ],
    ),
)
def test_fixture_states(
    root: Path, name: str, resources: int, outputs: dict | None, serial: int | None
) -> None:
    f = root / "tfstate" / name
    s = read_state(f)
    raw = json.loads(f.read_text())
    serial = raw["serial"] if serial is None else serial
    if outputs is None:
        outputs = {k: v["value"] for k, v in raw["outputs"].items()}
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
    shutil.copy(fixtures / "tfstate/lifecycle.tfstate", p)
    assert state_fingerprint(p).startswith("sha256:")


def test_cloud_providers(fixtures: Path, tmp_path: Path) -> None:
    """Builtin resources are not cloud state; a provider from a registry is."""
    for name in ("lifecycle.tfstate", "modules-two-resources.tfstate", "outputs-only.tfstate"):
        assert cloud_providers(read_state(fixtures / "tfstate" / name)) == ()
    # The same real state, its resources re-pointed at a registry provider.
    data = json.loads((fixtures / "tfstate/lifecycle.tfstate").read_text())
    for r in data["resources"]:
        r["provider"] = 'provider["registry.terraform.io/hashicorp/test"]'
    p = tmp_path / "cloud.tfstate"
    p.write_text(json.dumps(data))
    assert cloud_providers(read_state(p)) == ('provider["registry.terraform.io/hashicorp/test"]',)


def test_cloud_state_of_the_ec2_template(fixtures: Path) -> None:
    """The ec2 template's real state (made against a local AWS API where a provider
    mirror exists; else the own lifecycle state stands in, with no cloud provider)."""
    made = own_manifest()["ec2"]
    f = fixtures / "tfstate" / ("ec2.local-aws-api.tfstate" if made else "lifecycle.tfstate")
    want = ('provider["registry.terraform.io/hashicorp/aws"]',) if made else ()
    assert cloud_providers(read_state(f)) == want


def test_cloud_providers_upstream() -> None:
    """On the upstream corpus too, where it is present (else the own files above)."""
    root = UPSTREAM_TF or OWN_TF
    for f in sorted((root / "tfstate").glob("*.tfstate")):
        providers = cloud_providers(read_state(f))
        assert all("registry.terraform.io" in p for p in providers), f
    if UPSTREAM_TF:
        assert cloud_providers(
            read_state(UPSTREAM_TF / "tfstate/modules-two-resources.tfstate")
        ) == ('provider["registry.terraform.io/hashicorp/test"]',)
