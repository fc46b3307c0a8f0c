"""scaffold_files: what `create --backend pulumi` writes under the provider dir."""

from __future__ import annotations

from importlib import resources

import pytest
import yaml
from dreamlake.engine.backends.pulumi.scaffold import scaffold_files
from dreamlake.engine.contract.errors import UsageError
from dreamlake.engine.world.vendors import get_template
from dreamlake.stacks import VENDORS


@pytest.mark.parametrize("vendor", VENDORS)
def test_files_and_their_roles(vendor: str) -> None:
    files = scaffold_files(get_template(vendor), "lab")
    assert set(files) == {
        "pulumi/Pulumi.yaml",
        "pulumi/__main__.py",
        "pulumi/Pulumi.lab.yaml",
        "pulumi/ADAPT.md",
        "pulumi/.gitignore",
    }
    assert all(isinstance(v, bytes) for v in files.values())
    project = yaml.safe_load(files["pulumi/Pulumi.yaml"])
    assert project["name"] == "dreamlake" and project["runtime"] == "python"
    assert "main" not in project  # the default entry: __main__.py in the project folder
    main = files["pulumi/__main__.py"].decode()
    # a thin wrapper over the packaged component: one code path with embedding teams
    assert main.rstrip().endswith(f"from dreamlake.stacks.{vendor} import main\n\nmain()")
    compile(main, "__main__.py", "exec")
    assert resources.files("dreamlake.stacks").joinpath(vendor, "program.py").is_file()
    ignored = files["pulumi/.gitignore"].decode().splitlines()
    assert {".state/", ".passphrase", "summary.plan.json", "update.plan.json"} <= set(ignored)


@pytest.mark.parametrize("vendor", VENDORS)
def test_account_specific_decisions_are_commented_out(vendor: str) -> None:
    t = get_template(vendor)
    text = scaffold_files(t, "lab")["pulumi/Pulumi.lab.yaml"].decode()
    config = (yaml.safe_load(text) or {}).get("config") or {}
    tfvars = t.root.joinpath("terraform", "terraform.tfvars").read_text()
    for d in t.decisions:
        shipped = any(
            line.startswith(f"{d.var} ") or line.startswith(f"{d.var}=")
            for line in tfvars.splitlines()
        )
        if shipped:
            assert f"dreamlake:{d.key}" in config
        else:
            assert f"dreamlake:{d.key}" not in config
            assert f"  # dreamlake:{d.key}: " in text


def test_local_stack_file_values() -> None:
    text = scaffold_files(get_template("local"), "lab")["pulumi/Pulumi.lab.yaml"].decode()
    assert yaml.safe_load(text) == {"config": {"dreamlake:worker_name": "CHANGE-ME"}}
    assert "  # dreamlake:workdir: /var/lib/nymph" in text
    assert "  # dreamlake:queues: [default]" in text
    assert "dreamlake provider create -n lab --continue" in text


def test_adapt_md_maps_every_decision() -> None:
    t = get_template("ec2")
    md = scaffold_files(t, "edge")["pulumi/ADAPT.md"].decode()
    for d in t.decisions:
        assert f"`dreamlake:{d.key}`" in md and f"`{d.var}`" in md
    assert "Pulumi.edge.yaml" in md and "PULUMI_CONFIG_PASSPHRASE" in md


def test_vendor_without_a_program_is_refused() -> None:
    with pytest.raises(UsageError):
        scaffold_files(get_template("ssh"), "lab")
