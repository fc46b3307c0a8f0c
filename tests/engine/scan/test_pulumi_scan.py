"""scan_pulumi: Pulumi.<name>.yaml against the vendor's config model."""

from __future__ import annotations

from pathlib import Path

import pytest
from dreamlake.engine.backends.pulumi.scaffold import scaffold_files
from dreamlake.engine.scan.pulumi import commented_lines, read_stack_config, scan_pulumi
from dreamlake.engine.world.paths import ProviderPaths
from dreamlake.engine.world.vendors import get_template


def _scaffold(tmp_path: Path, vendor: str, name: str = "lab") -> ProviderPaths:
    d = tmp_path / name
    for rel, data in scaffold_files(get_template(vendor), name).items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_bytes(data)
    return ProviderPaths(d)


def _edit(paths: ProviderPaths, old: str, new: str) -> None:
    f = paths.dir / "pulumi" / f"Pulumi.{paths.name}.yaml"
    text = f.read_text()
    assert old in text, old
    f.write_text(text.replace(old, new))


def _line_of(paths: ProviderPaths, needle: str) -> int:
    text = (paths.dir / "pulumi" / f"Pulumi.{paths.name}.yaml").read_text().splitlines()
    return next(i for i, line in enumerate(text, 1) if needle in line)


def test_fresh_scaffold_blocks_on_every_account_decision(tmp_path: Path) -> None:
    paths = _scaffold(tmp_path, "local")
    out = scan_pulumi(paths, get_template("local"))
    stack_file = str(paths.dir / "pulumi" / "Pulumi.lab.yaml")
    assert [(b.key, b.reason) for b in out] == [
        ("workdir", "unset"),
        ("queues", "unset"),
        ("worker_name", "placeholder"),
    ]
    assert all(b.file == stack_file and Path(b.file).is_absolute() for b in out)
    assert out[0].line == _line_of(paths, "# dreamlake:workdir:")
    assert out[1].line == _line_of(paths, "# dreamlake:queues:")
    assert out[2].line == _line_of(paths, "dreamlake:worker_name: CHANGE-ME")
    assert out[0].why == get_template("local").decision("workdir").why  # type: ignore[union-attr]


def test_resolved_decisions_do_not_block(tmp_path: Path) -> None:
    paths = _scaffold(tmp_path, "local")
    _edit(paths, "# dreamlake:workdir: /var/lib/nymph", "dreamlake:workdir: /srv/nymph")
    _edit(paths, "# dreamlake:queues: [default]", "dreamlake:queues: [default, cpu-small]")
    _edit(paths, "CHANGE-ME", "lab-box")
    assert scan_pulumi(paths, get_template("local")) == []


def test_invalid_values_carry_the_validation_message(tmp_path: Path) -> None:
    paths = _scaffold(tmp_path, "local")
    _edit(paths, "# dreamlake:workdir: /var/lib/nymph", "dreamlake:workdir: relative/dir")
    _edit(paths, "# dreamlake:queues: [default]", "dreamlake:queues: []")
    _edit(paths, "CHANGE-ME", "Lab_Box")
    out = {b.key: b for b in scan_pulumi(paths, get_template("local"))}
    assert {k: b.reason for k, b in out.items()} == {
        "workdir": "invalid",
        "queues": "invalid",
        "worker_name": "invalid",
    }
    assert out["workdir"].message == (
        'The workdir must be an absolute path other than /, e.g. "/var/lib/nymph".'
    )
    assert out["workdir"].line == _line_of(paths, "dreamlake:workdir: relative")
    assert "at most 63 characters" in (out["worker_name"].message or "")


def test_ec2_mirrors_the_terraform_validations(tmp_path: Path) -> None:
    paths = _scaffold(tmp_path, "ec2")
    _edit(paths, "# dreamlake:region: us-east-1", "dreamlake:region: Virginia")
    _edit(
        paths, "# dreamlake:subnet: subnet-0123456789abcdef0", "dreamlake:subnet: subnet-0a1b2c3d"
    )
    _edit(paths, "# dreamlake:instance_type: g5.xlarge", "dreamlake:instance_type: t3.micro")
    _edit(paths, "# dreamlake:worker_count: 1", "dreamlake:worker_count: 21")
    out = {b.key: (b.reason, b.message) for b in scan_pulumi(paths, get_template("ec2"))}
    assert out["region"] == (
        "invalid",
        'The region must be an AWS region name such as "us-east-1".',
    )
    assert "subnet" not in out
    assert out["instance_type"][0] == "invalid"
    assert out["ami"] == ("unset", None)
    # a setting outside the decisions blocks only when set to an invalid value
    assert out["worker_count"] == (
        "invalid",
        "The worker_count must be a whole number from 1 to 20.",
    )


def test_kube_cross_field_conflict(tmp_path: Path) -> None:
    paths = _scaffold(tmp_path, "kube")
    _edit(paths, "# dreamlake:region: us-east-1", "dreamlake:region: eu-west-1")
    _edit(paths, "# dreamlake:cluster_name: gpu-cluster", "dreamlake:cluster_name: gpu")
    _edit(paths, "# dreamlake:vpc: 10.42.0.0/16", "dreamlake:vpc: 10.42.0.0/24")
    _edit(
        paths, "# dreamlake:node_type: [g5.xlarge, g5.2xlarge]", "dreamlake:node_type: [g5.xlarge]"
    )
    out = {b.key: b.reason for b in scan_pulumi(paths, get_template("kube"))}
    assert out == {"vpc": "invalid"}
    _edit(paths, "dreamlake:vpc: 10.42.0.0/24", "dreamlake:vpc: 10.42.0.0/16")
    _edit(paths, "# dreamlake:node_min: 0", "dreamlake:node_min: 3")
    out2 = {b.key: b for b in scan_pulumi(paths, get_template("kube"))}
    assert {k: b.reason for k, b in out2.items()} == {
        "node_min": "conflict",
        "node_desired": "conflict",
        "node_max": "conflict",
    }
    assert out2["node_min"].line == _line_of(paths, "dreamlake:node_min: 3")


def test_gce_values(tmp_path: Path) -> None:
    paths = _scaffold(tmp_path, "gce")
    _edit(paths, "# dreamlake:project: my-gpu-project", "dreamlake:project: '123456789'")
    _edit(paths, "# dreamlake:zone: us-central1-a", "dreamlake:zone: us-central1-a")
    _edit(paths, "# dreamlake:gpu_type: nvidia-tesla-t4", "dreamlake:gpu_type: nvidia-l4")
    out = {b.key: b.reason for b in scan_pulumi(paths, get_template("gce"))}
    assert out == {"project": "invalid"}


def test_missing_stack_file_is_all_unset(tmp_path: Path) -> None:
    paths = _scaffold(tmp_path, "local")
    (paths.dir / "pulumi" / "Pulumi.lab.yaml").unlink()
    out = scan_pulumi(paths, get_template("local"))
    assert {b.reason for b in out} == {"unset"} and all(b.line is None for b in out)
    assert "does not exist" in (out[0].message or "")


def test_broken_yaml_is_invalid_with_its_line(tmp_path: Path) -> None:
    paths = _scaffold(tmp_path, "local")
    f = paths.dir / "pulumi" / "Pulumi.lab.yaml"
    f.write_text("config:\n  dreamlake:workdir: /x\n  dreamlake:queues: [a\n")
    out = scan_pulumi(paths, get_template("local"))
    assert {b.reason for b in out} == {"invalid"}
    assert out[0].line is not None and "not valid YAML" in (out[0].message or "")


def test_secure_values_count_as_set(tmp_path: Path) -> None:
    paths = _scaffold(tmp_path, "local")
    f = paths.dir / "pulumi" / "Pulumi.lab.yaml"
    f.write_text(
        "config:\n  dreamlake:workdir: /srv/n\n  dreamlake:queues: [a]\n"
        "  dreamlake:worker_name:\n    secure: v1:abc==\n"
    )
    assert scan_pulumi(paths, get_template("local")) == []


def test_project_name_namespaces_the_keys(tmp_path: Path) -> None:
    paths = _scaffold(tmp_path, "local")
    proj = paths.dir / "pulumi" / "Pulumi.yaml"
    proj.write_text(proj.read_text().replace("name: dreamlake", "name: lab-infra"))
    f = paths.dir / "pulumi" / "Pulumi.lab.yaml"
    f.write_text(
        "config:\n  dreamlake:workdir: /ignored\n  lab-infra:workdir: /srv/n\n"
        "  lab-infra:queues: [a]\n  lab-infra:worker_name: box\n  aws:region: us-east-1\n"
    )
    assert scan_pulumi(paths, get_template("local")) == []


def test_bare_and_duplicate_keys(tmp_path: Path) -> None:
    paths = _scaffold(tmp_path, "local")
    f = paths.dir / "pulumi" / "Pulumi.lab.yaml"
    f.write_text(
        "config:\n"
        "  workdir: /srv/n\n"  # line 2: bare, Pulumi does not read it
        "  dreamlake:queues: [a]\n"  # line 3
        "  queues: [b]\n"  # line 4: bare beside the namespaced key
        "  dreamlake:worker_name: box\n"  # line 5
        "  dreamlake:worker_name: box2\n"  # line 6: given twice
    )
    out = {b.key: (b.reason, b.line) for b in scan_pulumi(paths, get_template("local"))}
    assert out == {
        "workdir": ("invalid", 2),
        "queues": ("conflict", 4),
        "worker_name": ("conflict", 6),
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "config:\n  dreamlake:a: 1\n  other:b: 2\n  dreamlake:c: [x]\n",
            ({"a": 1, "c": ["x"]}, {"a": 2, "c": 4}),
        ),
        ("config:\n", ({}, {})),
        ("encryptionsalt: v1:x\n", ({}, {})),
        ("", ({}, {})),
    ],
)
def test_read_stack_config(text: str, expected: tuple[dict, dict]) -> None:
    values, lines, issues = read_stack_config(text, "dreamlake")
    assert (values, lines) == expected and issues == {}


def test_commented_lines_prefer_the_namespaced_key() -> None:
    text = "config:\n  # queues: which ones\n  # dreamlake:queues: [a]\n"
    assert commented_lines(text, "dreamlake") == {"queues": 3}
