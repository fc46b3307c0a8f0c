"""The Pulumi programs in dreamlake.stacks: config models mirroring the terraform
validations, the self-contained program files, and the local program run for real
by the Pulumi SDK with its own mock monitor (no CLI, no engine)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from importlib import import_module, resources

import pytest
from dreamlake.engine.world.vendors import get_template
from dreamlake.stacks import VENDORS
from pydantic import ValidationError

LOCAL = {"workdir": "/var/lib/nymph/", "queues": ["gpu", "gpu", "cpu"], "worker_name": "lab-box"}


@pytest.mark.parametrize("vendor", VENDORS)
def test_config_fields_are_the_template_decision_keys(vendor: str) -> None:
    mod = import_module(f"dreamlake.stacks.{vendor}")
    keys = tuple(d.key for d in get_template(vendor).decisions)
    assert keys == mod.DECISIONS
    fields = mod.Config.model_fields
    assert all(fields[k].is_required() for k in keys)
    assert all(not f.is_required() for k, f in fields.items() if k not in keys)


SHARED = "dreamlake.stacks.support"


def _top_imports(src: str) -> set[str]:
    tree = ast.parse(src)
    top = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    assert all(n.level == 0 for n in top if isinstance(n, ast.ImportFrom))
    return {
        (f"{n.module}.{n.names[0].name}" if n.module == "dreamlake.stacks" else n.module or "")
        if isinstance(n, ast.ImportFrom)
        else n.names[0].name
        for n in top
    }


def _vendor_modules(vendor: str) -> list[str]:
    """The vendor's own modules beside its program (``kube``'s config model, say)."""
    folder = resources.files("dreamlake.stacks").joinpath(vendor)
    return sorted(
        p.name.removesuffix(".py")
        for p in folder.iterdir()
        if p.name.endswith(".py") and p.name not in ("__init__.py", "program.py")
    )


@pytest.mark.parametrize("vendor", VENDORS)
def test_program_file_is_self_contained(vendor: str) -> None:
    """A copy of program.py works wherever dreamlake is installed: it may import only
    the standard library, pydantic, the helpers every vendor shares
    (``dreamlake.stacks.support``, by its absolute name), its vendor's own modules (by
    their absolute names; each of those as self-contained) and (inside functions)
    pulumi and its providers."""
    own = {f"dreamlake.stacks.{vendor}.{m}" for m in _vendor_modules(vendor)}
    src = resources.files("dreamlake.stacks").joinpath(vendor, "program.py").read_text()
    names = _top_imports(src)
    assert SHARED in names
    assert all(n in (SHARED, *own) or not n.startswith(("dreamlake", "pulumi")) for n in names), (
        names
    )
    for module in _vendor_modules(vendor):
        src = resources.files("dreamlake.stacks").joinpath(vendor, f"{module}.py").read_text()
        names = _top_imports(src)
        assert all(n == SHARED or not n.startswith(("dreamlake", "pulumi")) for n in names), (
            module,
            names,
        )


def test_the_shared_helpers_need_only_pydantic() -> None:
    """The helpers every vendor shares import the standard library and pydantic at
    the top, pulumi only inside the functions that run in a program."""
    src = resources.files("dreamlake.stacks").joinpath("support.py").read_text()
    names = _top_imports(src)
    assert all(not n.startswith(("dreamlake", "pulumi")) for n in names), names


@pytest.mark.parametrize("helper", ["given_provider", "is_input", "lift", "ConfigError"])
def test_one_helper_serves_every_vendor(helper: str) -> None:
    """A fix to a shared helper reaches every vendor: no program defines its own."""
    from dreamlake.stacks import support

    for vendor in VENDORS:
        mod = import_module(f"dreamlake.stacks.{vendor}.program")
        if hasattr(mod, helper):
            assert getattr(mod, helper) is getattr(support, helper), (vendor, helper)
        for module in ("program", *_vendor_modules(vendor)):
            src = resources.files("dreamlake.stacks").joinpath(vendor, f"{module}.py").read_text()
            assert f"def {helper}(" not in src and f"class {helper}(" not in src, vendor


def test_config_models_load_without_pulumi() -> None:
    code = (
        "import sys\n"
        "import dreamlake.stacks.local, dreamlake.stacks.ec2, dreamlake.stacks.gce, dreamlake.stacks.kube\n"
        "assert not [m for m in sys.modules if m.startswith('pulumi')]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    ("values", "key"),
    [
        ({**LOCAL, "workdir": "/"}, "workdir"),
        ({**LOCAL, "workdir": "var/lib"}, "workdir"),
        ({**LOCAL, "queues": []}, "queues"),
        ({**LOCAL, "queues": ["GPU"]}, "queues"),
        ({**LOCAL, "worker_name": "-box"}, "worker_name"),
        ({**LOCAL, "worker_name": "a" * 64}, "worker_name"),
    ],
)
def test_local_validators(values: dict, key: str) -> None:
    from dreamlake.stacks.local import Config

    with pytest.raises(ValidationError) as ei:
        Config.model_validate(values)
    assert [e["loc"][0] for e in ei.value.errors()] == [key]


def test_local_config_error_names_each_key() -> None:
    from dreamlake.stacks.local import ConfigError, load_config

    with pytest.raises(ConfigError) as ei:
        load_config({"workdir": "rel"})
    lines = str(ei.value).splitlines()
    assert lines[0].startswith("dreamlake config: workdir: The workdir must be")
    assert "dreamlake config: queues: not set" in lines


@pytest.mark.parametrize(
    ("field", "bad", "good"),
    [
        ("region", "us-east", "us-gov-west-1"),
        ("subnet", "subnet-XYZ", "subnet-0123456789abcdef0"),
        ("instance_type", "m5.large", "p4d.24xlarge"),
        ("ami", "ami-123", "ami-0123456789abcdef0"),
        ("worker_count", 1.5, 20),
        ("root_volume_gb", 29, 30),
        ("ssh_ingress_cidrs", ["203.0.113.5"], ["203.0.113.0/24", "2001:db8::/32"]),
        ("name_prefix", "Dream", "dream-1"),
    ],
)
def test_ec2_validators(field: str, bad: object, good: object) -> None:
    from dreamlake.stacks.ec2 import Config

    base = {
        "region": "us-east-1",
        "subnet": "subnet-0123456789abcdef0",
        "instance_type": "g5.xlarge",
        "ami": "ami-0123456789abcdef0",
    }
    Config.model_validate({**base, field: good})
    with pytest.raises(ValidationError):
        Config.model_validate({**base, field: bad})


def test_local_program_runs_under_the_sdk_mocks() -> None:
    """Run the program through the Pulumi SDK's mock monitor in a child process
    (the SDK keeps global runtime settings) and read back the stack outputs."""
    code = r"""
import json, pulumi
from pulumi.runtime import Mocks, set_mocks
class M(Mocks):
    def new_resource(self, args): return [args.name + "_id", args.inputs]
    def call(self, args): return {}
set_mocks(M(), project="dreamlake", stack="lab", preview=False)
from dreamlake.stacks.local import Config, program, daemon_args
cfg = Config(workdir="/var/lib/nymph/", queues=["gpu", "gpu", "cpu"], worker_name="lab-box")
@pulumi.runtime.test
def check():
    program(cfg)
check()
print(json.dumps(daemon_args(cfg, "lab")))
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip().splitlines()[-1] == (
        '["nymph", "--provider", "lab", "--instance-id", "lab-box", "--workdir", '
        '"/var/lib/nymph", "--queues", "gpu,cpu"]'
    )


_INLINE = r"""
import json, sys, pulumi
from pathlib import Path
from pulumi.runtime import Mocks, set_mocks
class M(Mocks):
    def new_resource(self, args): return [args.name + "_id", args.inputs]
    def call(self, args): return {}
set_mocks(M(), project="dreamlake", stack="lab", preview=False)
cfg = json.loads(sys.argv[2])
pulumi.runtime.set_all_config(
    {f"dreamlake:{k}": (v if isinstance(v, str) else json.dumps(v)) for k, v in cfg.items()})
from dreamlake.engine.backends.pulumi.automation import inline_program
prog = inline_program(Path(sys.argv[1]))
@pulumi.runtime.test
def check():
    prog()
try:
    check()
    print("OK")
except Exception as e:
    print("ERR", type(e).__name__, str(e).replace("\n", " | "))
"""


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"workdir": "/srv/n", "queues": ["a", "b"], "worker_name": "box"}, "OK"),
        (
            {"workdir": "srv", "queues": ["a"]},
            "ERR ConfigError dreamlake config: workdir: The workdir must be an absolute path "
            'other than /, e.g. "/var/lib/nymph". | dreamlake config: worker_name: not set',
        ),
    ],
)
def test_scaffolded_main_runs_inline_with_stack_config(config: dict, expected: str) -> None:
    """The local program file, run the way plan/apply run it (``inline_program``: as
    ``__main__``), reads its Config from the stack config under the Pulumi SDK's mocks."""
    main = resources.files("dreamlake.stacks").joinpath("local", "program.py")
    out = subprocess.run(
        [sys.executable, "-c", _INLINE, str(main), json.dumps(config)],
        check=True,
        capture_output=True,
        text=True,
    )
    assert out.stdout.strip().splitlines()[-1] == expected
