"""What ``create --backend pulumi`` writes under the provider directory.

``scaffold_files(template, name)`` returns relative path → content:

* ``pulumi/Pulumi.yaml`` — the project (runtime python; its name namespaces config keys);
* ``pulumi/__main__.py`` — a thin wrapper over the vendor's component
  (``dreamlake.stacks.<vendor>``): the CLI, ``pulumi up`` here and a team embedding
  the component run one code path. Yours to edit (wrap the component, add
  resources beside it, or replace it with a copy of the vendor's ``program.py``);
* ``pulumi/Pulumi.<name>.yaml`` — the decisions as stack config (named after the provider;
  the backend stack is ``<name>-<identity>``, see ``project``).
  Account-specific decisions are commented out (as they are in the terraform
  template's ``terraform.tfvars``), with the example value to replace;
* ``pulumi/ADAPT.md`` — how to choose each decision;
* ``pulumi/.gitignore`` — state, passphrase and plan files stay out of git.

The values and examples come from the template's ``terraform/terraform.tfvars``,
so both backends start from the same decisions.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

import yaml

from ...world.vendors import Template
from .project import BACKUPS, MAIN, PASSPHRASE, PROJECT_DEFAULT, STATE, SUMMARY, UPDATE_PLAN

STACKS_PACKAGE = "dreamlake.stacks"


def scaffold_files(template: Template, name: str) -> dict[str, bytes]:
    """Relative path under the provider dir → content, for the pulumi backend."""
    program_source(template.vendor)  # the vendor must have a Pulumi program
    program = main_source(template, name).encode()
    active, examples = tfvars_values(template)
    files = {
        "pulumi/Pulumi.yaml": project_yaml(template, name).encode(),
        f"pulumi/{MAIN}": program,
        f"pulumi/Pulumi.{name}.yaml": stack_yaml(template, name, active, examples).encode(),
        "pulumi/ADAPT.md": adapt_md(template, name).encode(),
        "pulumi/.gitignore": (
            f"# State, secrets and plans stay out of git.\n{STATE}/\n{PASSPHRASE}\n"
            f"{SUMMARY}\n{UPDATE_PLAN}\n{BACKUPS}/\n__pycache__/\n"
        ).encode(),
    }
    return files


def program_source(vendor: str) -> bytes:
    node = resources.files(STACKS_PACKAGE).joinpath(vendor).joinpath("program.py")
    if not node.is_file():
        from ...contract.errors import UsageError

        raise UsageError(
            f"vendor {vendor!r} has no Pulumi program (dreamlake.stacks.{vendor}); "
            "use --backend terraform"
        )
    return node.read_bytes()


COMPONENTS = {"local": "LocalWorker", "ec2": "GpuWorkers", "gce": "GpuVm", "kube": "GpuCluster"}


def main_source(template: Template, name: str) -> str:
    """The scaffolded ``__main__.py``: the vendor's ``main()``, which reads the stack
    config with Pulumi's typed getters and builds the component."""
    vendor = template.vendor
    component = COMPONENTS.get(vendor, "the component")
    return (
        f'"""The Pulumi program of dreamlake provider {name!r} (vendor {vendor}).\n'
        "\n"
        f"A thin wrapper over ``dreamlake.stacks.{vendor}.{component}``, the component your\n"
        "own Pulumi programs can embed as well: one code path. ``main()`` reads the stack\n"
        f"config (``Pulumi.{name}.yaml``) with Pulumi's typed getters, checks it with\n"
        "``Config`` (a rejected value fails with ``dreamlake config: <key>: <why>``) and\n"
        "declares the component, exporting its outputs as the stack's.\n"
        "\n"
        "This file is yours to edit: build the component yourself to add resources beside\n"
        "it, e.g.\n"
        "\n"
        f"    from dreamlake.stacks.{vendor} import read_pulumi_config, program\n"
        "    workers = program(read_pulumi_config())\n"
        "    # ... more resources, using workers.outputs\n"
        "\n"
        f"or replace it with a copy of ``dreamlake/stacks/{vendor}/program.py`` to change\n"
        "what is declared.\n"
        '"""\n'
        "\n"
        f"from dreamlake.stacks.{vendor} import main\n"
        "\n"
        "main()\n"
    )


def project_yaml(template: Template, name: str) -> str:
    return (
        f"# The Pulumi project of dreamlake provider '{name}' (vendor {template.vendor}, "
        f"template v{template.version}).\n"
        "# The project name namespaces the config keys in Pulumi.<stack>.yaml.\n"
        f"name: {PROJECT_DEFAULT}\n"
        f"description: dreamlake provider {name} (vendor {template.vendor})\n"
        "# `pulumi up` in this folder runs __main__.py (the Python runtime's default entry).\n"
        "runtime: python\n"
    )


def _unquote(value: Any) -> Any:
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        try:
            return json.loads(value)
        except ValueError:
            return value[1:-1]
    if isinstance(value, list):
        return [_unquote(v) for v in value]
    if isinstance(value, dict):
        return {_unquote(k): _unquote(v) for k, v in value.items()}
    return value


_ASSIGN = re.compile(r"^\s*#\s*([A-Za-z_][\w-]*)\s*=\s*(.+?)\s*$")


def tfvars_values(template: Template) -> tuple[dict[str, Any], dict[str, Any]]:
    """(active, examples) by terraform variable name, from the template's tfvars:
    active assignments are shipped values; commented-out ones are examples."""
    node = template.root.joinpath("terraform").joinpath("terraform.tfvars")
    try:
        text = node.read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return {}, {}
    import hcl2

    try:
        active = {k: _unquote(v) for k, v in hcl2.loads(text).items()}
    except Exception:  # a tfvars python-hcl2 cannot read: fall back to the model
        active = {}
    examples: dict[str, Any] = {}
    for line in text.splitlines():
        m = _ASSIGN.match(line)
        if not m or m.group(1) in examples:
            continue
        try:
            examples.update(
                {k: _unquote(v) for k, v in hcl2.loads(line.lstrip()[1:] + "\n").items()}
            )
        except Exception:  # prose that happens to contain "=": not an example
            continue
    return active, examples


def _line(ns: str, key: str, value: Any) -> str:
    dumped = yaml.safe_dump(value, default_flow_style=True, width=1000).strip()
    dumped = dumped.removesuffix("...").strip()
    return f"{ns}:{key}: {dumped}"


def _model_fields(vendor: str) -> dict[str, Any]:
    from .project import config_model

    model = config_model(vendor)
    return dict(model.model_fields) if model is not None else {}


def stack_yaml(
    template: Template, name: str, active: dict[str, Any], examples: dict[str, Any]
) -> str:
    ns = PROJECT_DEFAULT
    fields = _model_fields(template.vendor)
    out = [
        f"# Decisions for dreamlake provider '{name}' (vendor {template.vendor}, "
        f"template v{template.version}).",
        "# Read ADAPT.md before choosing values: the examples come from someone else's",
        "# account. Uncomment each key and give it a value from YOUR account, then run",
        f"# `dreamlake provider create -n {name} --continue`.",
        "config:",
    ]
    for d in template.decisions:
        out.append(f"  # {d.prose_label}: {d.why}" if d.why else f"  # {d.prose_label}")
        if d.var in active:
            out.append(f"  {_line(ns, d.key, active[d.var])}")
        else:
            example = examples.get(d.var, d.placeholder if d.placeholder is not None else "")
            out.append(f"  # {_line(ns, d.key, example)}")
        out.append("")
    decision_keys = {d.key for d in template.decisions}
    optional = []
    for key, field in fields.items():
        if key in decision_keys or field.is_required():
            continue
        if key in active:
            optional.append(f"  {_line(ns, key, active[key])}")
        elif key in examples:
            optional.append(f"  # {_line(ns, key, examples[key])}")
        else:
            default = field.get_default(call_default_factory=True)
            if isinstance(default, float) and default.is_integer():
                default = int(default)
            optional.append(f"  # {_line(ns, key, default)}")
    if optional:
        out.append(
            "  # Optional settings: uncomment to change (defaults are in the Config model of __main__.py)."
        )
        out.extend(optional)
    return "\n".join(out).rstrip() + "\n"


def adapt_md(template: Template, name: str) -> str:
    ns = PROJECT_DEFAULT
    lines = [
        f"# Adapting the `{template.vendor}` template (Pulumi)",
        "",
        f"Every decision lives in `Pulumi.{name}.yaml` (named after the provider)",
        f"under `config:`, as `{ns}:<key>`. Uncomment the key, set a value from YOUR account,",
        f"then run `dreamlake provider create -n {name} --continue`. The values are checked by",
        f"the vendor's `Config` model (`dreamlake.stacks.{template.vendor}`: the same rules as",
        f"the terraform template's `variables.tf`); `{MAIN}` is yours to edit.",
        "",
        "| decision | stack config key | terraform variable | how to choose |",
        "| --- | --- | --- | --- |",
    ]
    for d in template.decisions:
        lines.append(f"| {d.prose_label} | `{ns}:{d.key}` | `{d.var}` | {d.why} |")
    lines += [
        "",
        "State lives in `.state/` beside this file unless `PULUMI_BACKEND_URL` or",
        "provider.json `settings.pulumi.backendUrl` names another backend. Secrets are",
        "encrypted with `PULUMI_CONFIG_PASSPHRASE`, else a passphrase generated into",
        "`.passphrase` (mode 0600): keep it, it decrypts the state.",
    ]
    node = template.root.joinpath("ADAPT.md")
    if node.is_file():
        vendor_notes = node.read_text(encoding="utf-8").replace("NAME", name)
        lines += [
            "",
            "## The template's notes",
            "",
            "Written for the terraform template: where they say `terraform/terraform.tfvars`,",
            f"set the same decision in `Pulumi.{name}.yaml` under the key in the table above.",
            "",
            re.sub(r"^#", "##", vendor_notes, flags=re.M).rstrip(),
        ]
    return "\n".join(lines) + "\n"
