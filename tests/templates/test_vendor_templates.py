"""Every shipped vendor template: manifest, decisions, Terraform hygiene, ADAPT.md."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import hcl2
import pytest
from dreamlake.engine.scan.adopt import scan_adopt
from dreamlake.engine.scan.terraform import scan_terraform
from dreamlake.engine.scan.tfvars import unquote
from dreamlake.engine.world.paths import ProviderPaths
from dreamlake.engine.world.vendors import get_template

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
TF_VENDORS = ["kube", "ec2", "gce", "local"]
VENDORS = [*TF_VENDORS, "ssh"]


def manifest(vendor: str) -> dict:
    return json.loads((TEMPLATES / vendor / "TEMPLATE.json").read_text())


def variables(vendor: str) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for f in sorted((TEMPLATES / vendor / "terraform").glob("*.tf")):
        for entry in hcl2.loads(f.read_text()).get("variable", []):
            for label, body in entry.items():
                out[unquote(label)] = body
    return out


def outputs(vendor: str) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for f in sorted((TEMPLATES / vendor / "terraform").glob("*.tf")):
        for entry in hcl2.loads(f.read_text()).get("output", []):
            for label, body in entry.items():
                out[unquote(label)] = body
    return out


@pytest.mark.parametrize("vendor", VENDORS)
def test_manifest_shape(vendor: str) -> None:
    m = manifest(vendor)
    assert m["vendor"] == vendor and m["version"] >= 1 and m["kind"]
    assert m["backends"] == (["none"] if vendor == "ssh" else ["terraform", "pulumi"])
    assert "ADAPT.md" in m["files"]
    keys = [d["key"] for d in m["decisions"]]
    assert keys and len(keys) == len(set(keys))
    for d in m["decisions"]:
        assert set(d) <= {"key", "var", "file", "why", "probe", "placeholder", "label"}
        assert re.fullmatch(r"[a-z][a-z0-9_]*", d["key"])
        assert d["why"].strip().endswith(".")
        assert (TEMPLATES / vendor / d["file"]).is_file()
        if vendor == "ssh":
            assert d["file"] == "adopt.json"
        else:
            assert d["file"] == "terraform/terraform.tfvars"
    t = get_template(vendor)
    assert [d.key for d in t.decisions] == keys


@pytest.mark.parametrize("vendor", ["ec2", "kube"])
def test_aws_region_decisions_use_the_regions_probe(vendor: str) -> None:
    assert get_template(vendor).decision("region").probe == "aws-regions-in-use"  # type: ignore[union-attr]


@pytest.mark.parametrize("vendor", VENDORS)
def test_adapt_covers_every_decision(vendor: str) -> None:
    text = (TEMPLATES / vendor / "ADAPT.md").read_text()
    for d in manifest(vendor)["decisions"]:
        assert re.search(rf"^## `{d['key']}`", text, re.M), (
            f"ADAPT.md has no section for {d['key']}"
        )
        assert "Look at:" in text and "Choose:" in text


@pytest.mark.parametrize("vendor", TF_VENDORS)
def test_decision_variables_ship_deleted(vendor: str) -> None:
    """Account-specific values: declared with no default, and only commented out
    (or a placeholder) in terraform.tfvars."""
    declared = variables(vendor)
    tfvars = TEMPLATES / vendor / "terraform" / "terraform.tfvars"
    values = hcl2.loads(tfvars.read_text())
    for d in manifest(vendor)["decisions"]:
        assert d["var"] in declared, f"{d['var']} is not declared"
        assert "default" not in declared[d["var"]], f"{d['var']} ships a default"
        assert declared[d["var"]].get("description")
        if d["var"] in values:
            assert d.get("placeholder") is not None
        else:
            assert re.search(rf"^# {d['var']} = ", tfvars.read_text(), re.M)


@pytest.mark.parametrize("vendor", TF_VENDORS)
def test_validated_variables_and_worker_host_output(vendor: str) -> None:
    declared = variables(vendor)
    assert any(body.get("validation") for body in declared.values())
    for name, body in declared.items():
        for v in body.get("validation", []):
            msg = v["error_message"].strip('"')
            # Terraform < 1.2 wants a full sentence.
            assert msg[0].isupper() and msg.endswith((".", "?")), f"{vendor}/{name}: {msg}"
    outs = outputs(vendor)
    assert "worker_host" in outs
    assert all(o.get("description") for o in outs.values())


def test_local_outputs_localhost() -> None:
    assert outputs("local")["worker_host"]["value"] == '"localhost"'


def test_ec2_takes_endpoint_settings_not_as_decisions() -> None:
    declared = variables("ec2")
    assert declared["aws_endpoints"]["default"] == {}
    assert declared["aws_skip_credentials_validation"]["default"] is False
    vars_in_decisions = {d["var"] for d in manifest("ec2")["decisions"]}
    assert not vars_in_decisions & {"aws_endpoints", "aws_skip_credentials_validation"}
    text = (TEMPLATES / "ec2" / "terraform" / "versions.tf").read_text()
    assert 'dynamic "endpoints"' in text
    for key in (
        "skip_credentials_validation",
        "skip_requesting_account_id",
        "skip_metadata_api_check",
    ):
        assert re.search(rf"{key}\s*=\s*var\.aws_skip_credentials_validation", text)


def test_local_needs_no_provider_plugin() -> None:
    for f in (TEMPLATES / "local" / "terraform").glob("*.tf"):
        parsed = hcl2.loads(f.read_text())
        assert not parsed.get("resource") and not parsed.get("data") and not parsed.get("provider")
        for tf in parsed.get("terraform", []):
            assert "required_providers" not in tf


@pytest.mark.parametrize("vendor", VENDORS)
def test_no_credentials_in_any_file(vendor: str) -> None:
    pattern = re.compile(
        r"AKIA[0-9A-Z]{16}|(secret_key|access_key|password|token)\s*=|BEGIN [A-Z ]*PRIVATE KEY",
        re.I,
    )
    for f in (TEMPLATES / vendor).rglob("*"):
        if f.is_file():
            assert not pattern.search(f.read_text()), f"{f} looks like it holds a credential"


@pytest.mark.parametrize("vendor", TF_VENDORS)
def test_every_tf_parses(vendor: str) -> None:
    files = sorted((TEMPLATES / vendor / "terraform").glob("*.tf*"))
    assert files
    for f in files:
        hcl2.loads(f.read_text())


def test_fmt_check(tf_fmt: str) -> None:
    """One run over every template: it names each file that is not formatted."""
    r = subprocess.run(
        [tf_fmt, "fmt", "-check", "-diff", "-recursive", str(TEMPLATES)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("vendor", VENDORS)
def test_shipped_template_blocks_on_each_unresolved_decision(tmp_path: Path, vendor: str) -> None:
    d = tmp_path / vendor
    shutil.copytree(TEMPLATES / vendor, d)
    t = get_template(vendor)
    scan = scan_adopt if vendor == "ssh" else scan_terraform
    got = scan(ProviderPaths(d), t)
    assert got, "a shipped template always needs input"
    assert all(b.reason in ("unset", "placeholder") and b.line for b in got)


@pytest.mark.parametrize("vendor", TF_VENDORS)
def test_every_terraform_template_declares_target_status(vendor: str) -> None:
    """``suspend`` / ``resume`` write ``target_status`` into terraform.tfvars for every
    vendor (kube included: suspend destroys it), so each template declares it, as the
    vendor's Pulumi config model accepts it: never an undeclared-variable value."""
    spec = variables(vendor).get("target_status")
    assert spec is not None, f"{vendor}: no variable target_status"
    assert unquote(str(spec.get("default"))) == "active"
