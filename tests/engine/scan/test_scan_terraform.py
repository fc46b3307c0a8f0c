"""The Terraform decision scan over a provider folder scaffolded from a shipped template."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from dreamlake.engine.contract.errors import DreamlakeError
from dreamlake.engine.contract.result import EditThenContinue
from dreamlake.engine.scan.terraform import scan_terraform
from dreamlake.engine.world.paths import ProviderPaths
from dreamlake.engine.world.vendors import Decision, Template, get_template
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

TEMPLATES = Path(__file__).resolve().parents[3] / "templates"


def scaffold(tmp_path: Path, vendor: str, name: str = "demo") -> ProviderPaths:
    d = tmp_path / ".dream" / "providers" / name
    shutil.copytree(TEMPLATES / vendor, d, ignore=shutil.ignore_patterns("TEMPLATE.json"))
    return ProviderPaths(d)


def line_of(path: Path, needle: str) -> int:
    for i, line in enumerate(path.read_text().splitlines(), start=1):
        if needle in line:
            return i
    raise AssertionError(f"{needle!r} not in {path}")


def by_key(paths: ProviderPaths, vendor: str) -> dict[str, object]:
    return {b.key: b for b in scan_terraform(paths, get_template(vendor))}


def write_tfvars(paths: ProviderPaths, text: str, name: str = "terraform.tfvars") -> Path:
    f = paths.terraform / name
    f.write_text(text)
    return f


GOOD_LOCAL = 'workdir = "/srv/nymph"\nqueues = ["default"]\nworker_name = "box-1"\n'


def test_shipped_local_blocks_on_every_decision(tmp_path: Path) -> None:
    paths = scaffold(tmp_path, "local")
    tfvars = paths.terraform / "terraform.tfvars"
    got = scan_terraform(paths, get_template("local"))
    assert [(b.key, b.reason) for b in got] == [
        ("workdir", "unset"),
        ("queues", "unset"),
        ("worker_name", "placeholder"),
    ]
    workdir, queues, name = got
    assert workdir.file == str(tfvars.absolute())
    assert workdir.line == line_of(tfvars, "# workdir =")
    assert queues.line == line_of(tfvars, "# queues =")
    assert name.line == line_of(tfvars, "worker_name =")
    assert workdir.why == get_template("local").decision("workdir").why  # type: ignore[union-attr]
    assert name.message and "CHANGE-ME" in name.message
    assert workdir.observed is None


@pytest.mark.parametrize("vendor", ["ec2", "kube", "gce"])
def test_shipped_cloud_templates_block_unset_with_lines(tmp_path: Path, vendor: str) -> None:
    paths = scaffold(tmp_path, vendor)
    tfvars = paths.terraform / "terraform.tfvars"
    got = scan_terraform(paths, get_template(vendor))
    template = get_template(vendor)
    assert [b.key for b in got] == [d.key for d in template.decisions]
    for b, d in zip(got, template.decisions, strict=True):
        assert b.reason == "unset"
        assert b.line == line_of(tfvars, f"# {d.var} =")
        assert b.why == d.why


def test_resolved_local_is_clean(tmp_path: Path) -> None:
    paths = scaffold(tmp_path, "local")
    write_tfvars(paths, GOOD_LOCAL)
    assert scan_terraform(paths, get_template("local")) == []


def test_invalid_carries_the_validation_message(tmp_path: Path) -> None:
    paths = scaffold(tmp_path, "local")
    write_tfvars(paths, '\nworkdir = "relative/path"\nqueues = []\nworker_name = "Bad_Name"\n')
    got = by_key(paths, "local")
    assert {k: b.reason for k, b in got.items()} == {  # type: ignore[attr-defined]
        "workdir": "invalid",
        "queues": "invalid",
        "worker_name": "invalid",
    }
    assert got["workdir"].line == 2  # type: ignore[attr-defined]
    assert got["workdir"].message == (  # type: ignore[attr-defined]
        'The workdir must be an absolute path other than /, e.g. "/var/lib/nymph".'
    )
    assert got["queues"].message.startswith("List at least one queue")  # type: ignore[attr-defined]


def test_null_is_unset_at_its_line(tmp_path: Path) -> None:
    paths = scaffold(tmp_path, "local")
    write_tfvars(paths, GOOD_LOCAL + "\n")
    write_tfvars(paths, 'queues = ["a"]\nworker_name = "b"\nworkdir = null\n')
    got = scan_terraform(paths, get_template("local"))
    assert [(b.key, b.reason, b.line) for b in got] == [("workdir", "unset", 3)]


def test_missing_tfvars_is_unset_without_a_line(tmp_path: Path) -> None:
    paths = scaffold(tmp_path, "local")
    (paths.terraform / "terraform.tfvars").unlink()
    got = scan_terraform(paths, get_template("local"))
    assert {b.reason for b in got} == {"unset"}
    assert all(b.line is None for b in got)
    assert got[0].file == str((paths.terraform / "terraform.tfvars").absolute())


def test_wrong_type_is_invalid(tmp_path: Path) -> None:
    paths = scaffold(tmp_path, "local")
    write_tfvars(paths, 'workdir = "/srv"\nqueues = "default"\nworker_name = "box"\n')
    (b,) = scan_terraform(paths, get_template("local"))
    assert (b.key, b.reason, b.line) == ("queues", "invalid", 2)
    assert b.message and "must be a list" in b.message


def test_conflict_with_auto_tfvars(tmp_path: Path) -> None:
    paths = scaffold(tmp_path, "local")
    write_tfvars(paths, GOOD_LOCAL)
    auto = write_tfvars(paths, '# override\nworker_name = "other"\n', "zz.auto.tfvars")
    (b,) = scan_terraform(paths, get_template("local"))
    assert (b.key, b.reason, b.file, b.line) == ("worker_name", "conflict", str(auto), 2)
    assert b.message and '"box-1"' in b.message and '"other"' in b.message
    assert "zz.auto.tfvars" in b.message


def test_same_value_in_auto_tfvars_is_no_conflict(tmp_path: Path) -> None:
    paths = scaffold(tmp_path, "local")
    write_tfvars(paths, GOOD_LOCAL)
    write_tfvars(paths, 'queues = ["default"]\n', "a.auto.tfvars")
    assert scan_terraform(paths, get_template("local")) == []


def test_value_only_in_auto_tfvars_is_judged_there(tmp_path: Path) -> None:
    paths = scaffold(tmp_path, "local")
    write_tfvars(paths, 'workdir = "/srv"\nqueues = ["default"]\n')
    auto = write_tfvars(paths, '{"worker_name": "Nope"}', "x.auto.tfvars.json")
    (b,) = scan_terraform(paths, get_template("local"))
    assert (b.key, b.reason, b.file, b.line) == ("worker_name", "invalid", str(auto), 1)


def test_tfvars_syntax_error_raises_with_line_and_next_action(tmp_path: Path) -> None:
    paths = scaffold(tmp_path, "local", name="box")
    tfvars = write_tfvars(paths, 'workdir = "/srv"\nqueues = [\n')
    with pytest.raises(DreamlakeError) as info:
        scan_terraform(paths, get_template("local"))
    err = info.value
    assert err.kind == "tfvars_syntax"
    assert f"{tfvars}:3" in err.message
    assert err.next_action == EditThenContinue(
        file=str(tfvars), command="dreamlake provider create -n box --continue"
    )


def test_ec2_regex_escapes_are_honoured(tmp_path: Path) -> None:
    paths = scaffold(tmp_path, "ec2")
    base = 'region = "us-east-1"\nsubnet_id = "subnet-0123456789abcdef0"\nami_id = "ami-0123456789abcdef0"\n'
    write_tfvars(paths, base + 'instance_type = "g5.xlarge"\n')
    assert scan_terraform(paths, get_template("ec2")) == []
    write_tfvars(paths, base + 'instance_type = "g5Xxlarge"\n')
    (b,) = scan_terraform(paths, get_template("ec2"))
    assert (b.key, b.reason, b.line) == ("instance_type", "invalid", 4)


def test_kube_cidr_and_list_validations(tmp_path: Path) -> None:
    paths = scaffold(tmp_path, "kube")
    write_tfvars(
        paths,
        'region = "eu-west-1"\ncluster_name = "gpu"\nvpc = "10.0.0.0/8"\n'
        'gpu_instance_types = ["g5.xlarge", "m5.large"]\n',
    )
    got = by_key(paths, "kube")
    assert sorted(got) == ["node_type", "vpc"]
    write_tfvars(
        paths,
        'region = "eu-west-1"\ncluster_name = "gpu"\nvpc = "10.42.0.0/16"\n'
        'gpu_instance_types = ["g5.xlarge", "g6.2xlarge"]\n',
    )
    assert scan_terraform(paths, get_template("kube")) == []


def _custom(tmp_path: Path, variables: str, tfvars: str, decisions: list[Decision]) -> list:
    d = tmp_path / "prov"
    (d / "terraform").mkdir(parents=True)
    (d / "terraform" / "variables.tf").write_text(variables)
    (d / "terraform" / "terraform.tfvars").write_text(tfvars)
    t = Template("custom", 1, "test", ("terraform",), (), tuple(decisions))
    return scan_terraform(ProviderPaths(d), t)


def dec(var: str, **kw: object) -> Decision:
    return Decision(key=var, var=var, file="terraform/terraform.tfvars", why=f"pick {var}", **kw)  # type: ignore[arg-type]


def test_unevaluable_condition_is_left_for_plan(tmp_path: Path) -> None:
    variables = """
variable "name" {
  type = string
  validation {
    condition     = format("%s", var.name) == "never"
    error_message = "Never true."
  }
  validation {
    condition     = length(var.name) < 3
    error_message = "Too long."
  }
}
"""
    got = _custom(tmp_path, variables, 'name = "abcdef"\n', [dec("name")])
    assert [(b.reason, b.message) for b in got] == [("invalid", "Too long.")]
    got = _custom(tmp_path / "2", variables, 'name = "ab"\n', [dec("name")])
    assert got == []


def test_error_message_interpolates_the_value(tmp_path: Path) -> None:
    variables = """
variable "size" {
  type = number
  validation {
    condition     = var.size <= 10
    error_message = "Size ${var.size} is more than 10."
  }
}
"""
    (b,) = _custom(tmp_path, variables, 'size = "12"\n', [dec("size")])
    assert (b.reason, b.message, b.why) == ("invalid", "Size 12 is more than 10.", "pick size")


def test_condition_may_read_other_variables_and_defaults(tmp_path: Path) -> None:
    variables = """
variable "low" {
  type    = number
  default = 5
}
variable "high" {
  type = number
  validation {
    condition     = var.high > var.low
    error_message = "The high must exceed low."
  }
}
"""
    (b,) = _custom(tmp_path, variables, "high = 4\n", [dec("high")])
    assert b.reason == "invalid"
    assert _custom(tmp_path / "2", variables, "high = 4\nlow = 1\n", [dec("high")]) == []


def test_placeholder_from_manifest_and_marker(tmp_path: Path) -> None:
    variables = 'variable "a" {\n  type = string\n}\nvariable "b" {\n  type = map(string)\n}\n'
    got = _custom(
        tmp_path,
        variables,
        'a = "example"\nb = {team = "change-me"}\n',
        [dec("a", placeholder="example"), dec("b")],
    )
    assert [(b.key, b.reason, b.line) for b in got] == [
        ("a", "placeholder", 1),
        ("b", "placeholder", 2),
    ]


def test_template_and_heredoc_values_are_evaluated(tmp_path: Path) -> None:
    variables = 'variable "a" {\n  type = string\n  validation {\n    condition = var.a == "x"\n    error_message = "Must be x."\n  }\n}\n'
    assert _custom(tmp_path, variables, 'a = "${"x"}"\n', [dec("a")]) == []
    (b,) = _custom(tmp_path / "2", variables, "a = <<EOT\ny\nEOT\n", [dec("a")])
    assert (b.reason, b.message) == ("invalid", "Must be x.")


def _fuzz_paths(tmp_path: Path) -> ProviderPaths:
    d = tmp_path / "fuzz"
    if not d.exists():
        shutil.copytree(TEMPLATES / "local", d, ignore=shutil.ignore_patterns("TEMPLATE.json"))
    return ProviderPaths(d)


_VALUE = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**6), 10**6),
        st.text(max_size=12).map(lambda s: json.dumps(s)),
        st.sampled_from(['"/srv"', '"CHANGE-ME"', '"${1+1}"', '"a\\\\b"', "<<EOT\nx\nEOT", "1.5"]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(map(str, xs)) + "]"),
        st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2).map(
            lambda m: "{" + ", ".join(f"{k} = {v}" for k, v in m.items()) + "}"
        ),
    ),
    max_leaves=4,
).map(lambda v: "null" if v is None else str(v).lower() if isinstance(v, bool) else str(v))


@pytest.mark.slow
@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    values=st.dictionaries(st.sampled_from(["workdir", "queues", "worker_name", "other"]), _VALUE),
    junk=st.text(max_size=20),
)
def test_scan_never_crashes(tmp_path: Path, values: dict[str, str], junk: str) -> None:
    """Any tfvars text gives blockings or a tfvars_syntax error, nothing else."""
    paths = _fuzz_paths(tmp_path)
    text = "".join(f"{k} = {v}\n" for k, v in values.items())
    for body in (text, text + junk):
        write_tfvars(paths, body)
        try:
            got = scan_terraform(paths, get_template("local"))
        except DreamlakeError as e:
            assert e.kind == "tfvars_syntax"
            continue
        assert {b.key for b in got} <= {"workdir", "queues", "worker_name"}
        for b in got:
            assert b.line is None or b.line >= 1


def test_a_key_set_twice_is_a_syntax_error(tmp_path: Path) -> None:
    paths = scaffold(tmp_path, "local")
    tfvars = write_tfvars(paths, GOOD_LOCAL + 'workdir = "/other"\n')
    with pytest.raises(DreamlakeError) as info:
        scan_terraform(paths, get_template("local"))
    assert info.value.kind == "tfvars_syntax"
    assert f"{tfvars}:4" in info.value.message and "line 1" in info.value.message
