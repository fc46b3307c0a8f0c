"""The scan's verdicts held against the real ``terraform``, case by case.

A corpus (``data/tf_differential.txt``, plus every ``validation`` of the shipped
templates) of typed variables, conditions and values goes through

* each terraform binary found: ONE plugin-free root module holding a variable
  per case and a ``terraform.tfvars`` setting them all, planned with ``-json``;
  each error diagnostic is mapped back to its case by file and line (terraform
  1.0 stops after type-conversion errors, so those cases are dropped and the
  rest planned again);
* the scan's own reader and judge over the very same files.

The scan may say "can't judge" (left for plan); it must never disagree. The
terraform side is cached by binary version and corpus hash in the system's
temporary folder, so a rerun costs only the scan's side.

Corpus format: blocks separated by blank lines; ``type:`` (optional), one or
more ``cond:`` (``var.x`` is the case's variable), ``min: 1.3`` for conditions
an older terraform cannot load, ``template: kube.region`` in place of type and
conditions for a shipped template's variable, and one value per ``- `` line in
tfvars syntax
(a heredoc runs on to its closing marker).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from dreamlake.engine.scan.terraform import verdict
from dreamlake.engine.scan.tfvars import OPAQUE, read_var_file, read_variables
from tf_binaries import candidates, version_of

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "data" / "tf_differential.txt"
TEMPLATES = HERE.parents[2] / "templates"
CACHE = Path(tempfile.gettempdir()) / "dreamlake-tf-differential"
CHUNK = 80
HARNESS = "plan-until-clean-2"  # part of the cache key: change it with the harness


@dataclass
class Group:
    type: str | None
    conds: list[str]
    values: list[str]
    min: tuple[int, ...] = ()
    origin: str = ""
    others: list[tuple[str, str, str]] = field(default_factory=list)
    json: bool = False


@dataclass
class Case:
    name: str
    group: Group
    value: str
    tf_lines: range = field(default_factory=lambda: range(0))
    tfvars_line: int = 0
    tfvars_lines: range = field(default_factory=lambda: range(0))
    json_line: int = 0


def _template_vars() -> dict[str, tuple[str | None, list[str], str]]:
    """``{"kube.region": (type, [conditions with var.x], name)}`` for every
    validated variable of the shipped templates."""
    out: dict[str, tuple[str | None, list[str], str]] = {}
    for f in sorted(TEMPLATES.glob("*/terraform/variables.tf")):
        vendor = f.parent.parent.name
        text = f.read_text()
        for m in re.finditer(r'^variable "([^"]+)" \{\n(.*?)^\}', text, re.S | re.M):
            name, body = m.group(1), m.group(2)
            conds = re.findall(r"^\s*condition\s*=\s*(.+)$", body, re.M)
            if not conds:
                continue
            t = re.search(r"^\s*type\s*=\s*(.+)$", body, re.M)
            conds = [re.sub(rf"\bvar\.{re.escape(name)}\b", "var.x", c) for c in conds]
            out[f"{vendor}.{name}"] = (t.group(1).strip() if t else None, conds, name)
    return out


def load_corpus() -> list[Group]:
    templates = _template_vars()
    groups: list[Group] = []
    for block in re.split(r"\n\s*\n", CORPUS.read_text()):
        g = Group(type=None, conds=[], values=[])
        heredoc: str | None = None
        for line in block.splitlines():
            if heredoc is not None:
                # a heredoc value runs on until its closing marker
                g.values[-1] += "\n" + line
                if line.strip() == heredoc:
                    heredoc = None
                continue
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            key, _, rest = line.partition(":") if not line.startswith("- ") else ("-", "", "")
            if line.startswith("- "):
                g.values.append(line[2:])
                m = re.fullmatch(r"<<-?([A-Za-z_]+)", line[2:].strip())
                heredoc = m.group(1) if m else None
            elif key == "type":
                g.type = rest.strip()
            elif key == "cond":
                g.conds.append(rest.strip())
            elif key == "with":
                m = re.fullmatch(r"\s*(\w+)\s+(.+?)\s*=\s*(.+)", rest)
                if not m:
                    raise ValueError(f"corpus line not understood: {line!r}")
                g.others.append((m.group(1), m.group(2), m.group(3)))
            elif key == "file" and rest.strip() == "json":
                g.json = True
            elif key == "min":
                g.min = tuple(int(x) for x in rest.strip().split("."))
            elif key == "template":
                g.type, g.conds, _ = templates[rest.strip()]
                g.origin = rest.strip()
            else:
                raise ValueError(f"corpus line not understood: {line!r}")
        if g.values:
            groups.append(g)
    return groups


def build(groups: list[Group], version: tuple[int, ...]) -> list[Case]:
    cases: list[Case] = []
    for g in groups:
        if version < g.min:
            continue
        for v in g.values:
            cases.append(Case(f"c{len(cases)}", g, v))
    return cases


def render(cases: list[Case]) -> tuple[str, str, str]:
    """``variables.tf``, ``terraform.tfvars`` and ``terraform.tfvars.json`` for
    ``cases`` (line ranges noted; the JSON file is empty text when unused)."""
    tf: list[str] = []
    tfvars: list[str] = []
    json_entries: list[str] = []
    for c in cases:
        start = len(tf) + 1
        tf.append(f'variable "{c.name}" {{')
        if c.group.type:
            tf.append(f"  type = {c.group.type}")
        for cond in c.group.conds:
            own = re.sub(r"\bvar\.x\b", f"var.{c.name}", cond)
            for other, _, _ in c.group.others:
                own = re.sub(rf"\bvar\.{other}\b", f"var.{c.name}_{other}", own)
            tf.append("  validation {")
            tf.append(f"    condition     = {own}")
            tf.append('    error_message = "The value fails this rule."')
            tf.append("  }")
        tf.append("}")
        for other, type_, _ in c.group.others:
            tf.append(f'variable "{c.name}_{other}" {{ type = {type_} }}')
        c.tf_lines = range(start, len(tf) + 1)
        c.tfvars_line = len(tfvars) + 1
        if c.group.json:
            json_entries.append(f'  "{c.name}": {c.value}')
            c.json_line = len(json_entries) + 1
        else:
            tfvars.extend(f"{c.name} = {c.value}".split("\n"))
        for other, _, value in c.group.others:
            tfvars.append(f"{c.name}_{other} = {value}")
        c.tfvars_lines = range(c.tfvars_line, len(tfvars) + 1)
    tfjson = "{\n" + ",\n".join(json_entries) + "\n}\n" if json_entries else ""
    return "\n".join(tf) + "\n", "\n".join(tfvars) + "\n", tfjson


def _plan(tf: str, folder: Path, cases: list[Case]) -> tuple[set[str], set[str]]:
    """One plan: (cases refused at type conversion, cases with any error)."""
    vars_tf, tfvars, tfjson = render(cases)
    (folder / "variables.tf").write_text(vars_tf)
    (folder / "terraform.tfvars").write_text(tfvars)
    json_file = folder / "terraform.tfvars.json"
    if tfjson:
        json_file.write_text(tfjson)
    else:
        json_file.unlink(missing_ok=True)
    env = {
        **os.environ,
        "TF_CLI_CONFIG_FILE": os.devnull,
        "TF_IN_AUTOMATION": "1",
        "TF_DATA_DIR": str(folder / ".terraform"),
        "CHECKPOINT_DISABLE": "1",
    }
    env.pop("TF_LOG", None)
    r = subprocess.run(
        [tf, "plan", "-input=false", "-lock=false", "-refresh=false", "-json"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    by_tfvars = {line: c.name for c in cases for line in c.tfvars_lines if not c.group.json}
    by_json = {c.json_line: c.name for c in cases if c.group.json}
    conversion: set[str] = set()
    failing: set[str] = set()
    for line in r.stdout.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("type") != "diagnostic" or msg.get("@level") != "error":
            continue
        d = msg["diagnostic"]
        rng = d.get("range") or {}
        fname, at = rng.get("filename"), (rng.get("start") or {}).get("line")
        name = None
        if fname == "terraform.tfvars":
            name = by_tfvars.get(at)
        elif fname == "terraform.tfvars.json":
            name = by_json.get(at)
        elif fname == "variables.tf":
            name = next((c.name for c in cases if at in c.tf_lines), None)
        if name is None or d.get("summary") in ("Call to unknown function", "Unsupported argument"):
            raise AssertionError(f"a diagnostic not about one case's value: {d}")
        failing.add(name)
        if d.get("summary") == "Invalid value for input variable":
            conversion.add(name)
    if r.returncode not in (0, 1):
        raise AssertionError(f"terraform plan failed oddly: {r.stderr[-2000:]}")
    if r.returncode == 1 and not failing:
        raise AssertionError(f"terraform plan failed with no case diagnostic: {r.stdout[-3000:]}")
    return conversion, failing


def _refused(tf: str, folder: Path, cases: list[Case]) -> set[str]:
    """The cases terraform refuses, planning until a plan passes."""
    folder.mkdir(parents=True, exist_ok=True)
    invalid: set[str] = set()
    remaining = list(cases)
    # terraform stops at the first phase that fails (validation with unknown
    # values, then type conversion on 1.0, then the conditions): the cases
    # refused are taken out and the rest planned again, until a plan passes.
    for _ in range(8):
        _conversion, failing = _plan(tf, folder, remaining)
        if not failing:
            return invalid
        invalid |= failing
        remaining = [c for c in remaining if c.name not in failing]
    raise AssertionError("terraform kept refusing cases")


def terraform_verdicts(tf: str, cases: list[Case], work: Path) -> dict[str, str]:
    """``{case value text: "valid" | "invalid"}`` from the real terraform, cached."""
    version = ".".join(map(str, version_of(tf) or ()))
    vars_tf, tfvars, tfjson = render(cases)
    text = f"{HARNESS}\n{version}\n{vars_tf}\n{tfvars}\n{tfjson}"
    key = hashlib.sha256(text.encode()).hexdigest()[:24]
    cached = CACHE / f"{version}-{key}.json"
    if cached.is_file():
        return dict(json.loads(cached.read_text()))
    # terraform's plan time grows faster than its variable count: small
    # modules, two at a time, are quicker than one large one.
    chunks = [cases[i : i + CHUNK] for i in range(0, len(cases), CHUNK)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        parts = pool.map(
            lambda ix: _refused(tf, work / f"tf-{version}-{ix[0]}", ix[1]), enumerate(chunks)
        )
        invalid = set().union(*parts)
    result = {c.name: ("invalid" if c.name in invalid else "valid") for c in cases}
    render(cases)  # line ranges back to the full set
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(result))
    tmp.replace(cached)
    return result


def scan_verdicts(cases: list[Case], work: Path) -> dict[str, str]:
    """The scan's verdict per case, over the same files terraform was given."""
    out: dict[str, str] = {}
    for i in range(0, len(cases), CHUNK):
        chunk = cases[i : i + CHUNK]
        folder = work / f"scan-{i // CHUNK}"
        folder.mkdir(parents=True, exist_ok=True)
        vars_tf, tfvars, tfjson = render(chunk)
        (folder / "variables.tf").write_text(vars_tf)
        (folder / "terraform.tfvars").write_text(tfvars)
        files = [read_var_file(folder / "terraform.tfvars", "differential")]
        if tfjson:
            (folder / "terraform.tfvars.json").write_text(tfjson)
            files.append(read_var_file(folder / "terraform.tfvars.json", "differential"))
        specs = read_variables(folder)
        for c in chunk:
            value: Any = next((f.values[c.name] for f in files if c.name in f.values), OPAQUE)
            if value is OPAQUE or c.name not in specs:
                out[c.name] = "unknown"
                continue
            out[c.name] = verdict(specs[c.name], value, specs, files)[0]
    return out


BINARIES = candidates()


def test_corpus_covers_every_template_condition() -> None:
    covered = {g.origin for g in load_corpus()}
    missing = sorted(set(_template_vars()) - covered)
    assert not missing, f"template conditions with no corpus values: {missing}"


@pytest.mark.slow
@pytest.mark.parametrize("tf", BINARIES or [None], ids=lambda b: str(b))
def test_scan_never_disagrees_with_terraform(
    tf: str | None, tmp_path: Path, record_property: Any
) -> None:
    if tf is None:
        pytest.skip("needs a terraform binary (TERRAFORM_BINARY, PATH or the venv)")
    version = version_of(tf) or ()
    cases = build(load_corpus(), version)
    expected = terraform_verdicts(tf, cases, tmp_path)
    got = scan_verdicts(cases, tmp_path)
    wrong = [
        f"{c.name}: type={c.group.type} cond={c.group.conds} value={c.value} "
        f"terraform={expected[c.name]} scan={got[c.name]}"
        for c in cases
        if got[c.name] != "unknown" and got[c.name] != expected[c.name]
    ]
    agree = sum(1 for c in cases if got[c.name] == expected[c.name])
    unknown = sum(1 for c in cases if got[c.name] == "unknown")
    summary = (
        f"terraform {'.'.join(map(str, version))}: {len(cases)} cases, {agree} agree, "
        f"{unknown} can't judge, {len(wrong)} wrong"
    )
    record_property("agreement", summary)
    print(summary)
    assert not wrong, summary + "\n" + "\n".join(wrong)
