"""The real ``lakeshore`` CLI against a real server, each command a process of its own:
forked from a server with the imports done (``tests/cli_fork.py``: same exit code,
streams and environment as the installed script's subprocess), and the installed
script itself for the ``.dreamrc`` test."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import registry_harness
from cli_fork import run_module
from registry_harness import PLAINTEXTS, Server

pytestmark = pytest.mark.slow  # ~40 CLI runs


def _forked_cli(
    self: Server,
    *args: str,
    namespace: str | None = None,
    token: str | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``Server.cli`` (the installed ``lakeshore`` script, whose ``main`` this module's
    ``__main__`` calls) as a forked process; its output recorded for the leak scan."""
    proc = run_module(
        "dreamlake.cli.lakeshore.app",
        args,
        env=self.env(namespace, token),
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        text=True,
        timeout=60,
    )
    registry_harness.record(f"cli {' '.join(args)} stdout", proc.stdout)
    registry_harness.record(f"cli {' '.join(args)} stderr", proc.stderr)
    return proc


@pytest.fixture(autouse=True)
def _cli_forked(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(Server, "cli", _forked_cli)
    yield


def _ok(proc) -> str:  # type: ignore[no-untyped-def]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return str(proc.stdout)


def test_providers_journey(sqlite_server: Server, tmp_path: Path) -> None:
    s = sqlite_server
    ns = s.namespace()
    run = lambda *a: s.cli(*a, namespace=ns)  # noqa: E731
    _ok(
        run("secrets", "add", "aws", "--kind", "aws_keypair", "--value-env", "AWS_PAIR_FOR_TEST")
    ) if False else None
    f = tmp_path / "pair"
    f.write_text(PLAINTEXTS["aws"] + "\n")
    out = _ok(run("secrets", "add", "aws", "--kind", "aws_keypair", "--value-file", str(f)))
    assert "aws" in out and PLAINTEXTS["aws_secret"] not in out
    out = _ok(
        run(
            "providers",
            "add",
            "aws-us-east",
            "--launcher",
            "EC2",
            "--kwarg",
            "region=us-east-1",
            "--kwarg",
            "key_name=lakeshore-ops",
            "--kwarg",
            "security_group=sg-0123abc",
            "--kwarg",
            "iam_instance_profile_arn=arn:aws:iam::123456789012:instance-profile/lakeshore-worker",
            "--kwarg",
            'aws_credentials={"$secret":"aws"}',
        )
    )
    assert "aws-us-east" in out and "daemon" in out
    base = tmp_path / "base.yaml"
    base.write_text("host: lab.internal\nuser: ops\nopts:\n  a: 1\n")
    _ok(
        run(
            "providers",
            "add",
            "lab",
            "--launcher",
            "SSH",
            "--kwargs-file",
            str(base),
            "--kwarg",
            "opts.b=2",
            "--kwarg",
            "port=2222",
        )
    )
    row = json.loads(_ok(run("providers", "show", "lab", "--json")))
    assert row["kwargs"] == {
        "host": "lab.internal",
        "user": "ops",
        "opts": {"a": 1, "b": 2},
        "port": 2222,
    }
    assert row["dispatch"] == "direct"
    row = json.loads(
        _ok(
            run(
                "providers",
                "update",
                "lab",
                "--kwarg",
                "opts.a=null",
                "--kwarg",
                "user=root",
                "--dispatch",
                "daemon",
                "--tunnel",
                "wg-lab",
                "--json",
            )
        )
    )
    assert row["kwargs"]["opts"] == {"b": 2} and row["kwargs"]["user"] == "root"
    assert row["dispatch"] == "daemon" and row["tunnel"] == "wg-lab"
    repl = tmp_path / "repl.json"
    repl.write_text('{"host": "other"}')
    row = json.loads(
        _ok(run("providers", "update", "lab", "--kwargs-file", str(repl), "--tunnel", "", "--json"))
    )
    assert row["kwargs"] == {"host": "other"} and row["tunnel"] is None
    bad = run("providers", "update", "lab", "--launcher", "EC2")
    assert bad.returncode == 1 and "immutable" in bad.stderr and "next:" in bad.stderr
    bad = run("providers", "add", "Bad", "--launcher", "EC2")
    assert bad.returncode == 1 and "^[a-z0-9][a-z0-9-]*$" in bad.stderr
    bad = run("providers", "add", "x", "--launcher", "Docker")
    assert bad.returncode == 1 and "EC2, GCE, Kube, SSH, SLURM" in bad.stderr
    bad = run("providers", "add", "x", "--launcher", "EC2", "--kwarg", 'c={"$secret":"nope"}')
    assert bad.returncode == 1 and "422" in bad.stderr and "nope" in bad.stderr
    bad = run("providers", "add", "x", "--launcher", "EC2", "--kwarg", "novalue")
    assert bad.returncode == 1 and "KEY=VALUE" in bad.stderr

    _ok(run("providers", "add", "old", "--launcher", "SLURM", "--kwarg", "host=login"))
    _ok(run("providers", "hide", "lab"))
    _ok(run("providers", "remove", "old"))
    table = _ok(run("providers", "list"))
    lines = table.splitlines()
    assert lines[0].split() == ["NAME", "LAUNCHER", "DISPATCH", "KWARGS"]
    assert [ln.split()[0] for ln in lines[1:]] == ["aws-us-east"]
    assert "region=us-east-1" in table
    assert "aws_credentials = $secret:aws" in _ok(run("providers", "show", "aws-us-east"))
    assert any(
        ln.startswith("lab  [H]") for ln in _ok(run("providers", "list", "--hidden")).splitlines()
    )
    deleted = _ok(run("providers", "list", "--deleted")).splitlines()
    assert any(ln.startswith("old  [D 20") for ln in deleted) and not any(
        ln.startswith("lab") for ln in deleted
    )
    everything = _ok(run("providers", "list", "--all"))
    assert {ln.split()[0] for ln in everything.splitlines()[1:]} == {"aws-us-east", "lab", "old"}
    listed = json.loads(_ok(run("providers", "list", "--all", "--json")))
    assert {r["name"] for r in listed} == {"aws-us-east", "lab", "old"}
    _ok(run("providers", "restore", "old"))
    _ok(run("providers", "unhide", "lab"))
    assert len(_ok(run("providers", "list")).splitlines()) == 4

    report = run("providers", "test", "aws-us-east")
    assert report.returncode == 0, report.stderr
    assert "did not call AWS: no network check was made" in report.stdout
    assert "secret 'aws' exists and decrypts" in report.stdout
    slurm = run("providers", "test", "old")
    assert "stub" not in slurm.stdout and "sbatch" in slurm.stdout
    _ok(run("providers", "add", "gce-bad", "--launcher", "GCE", "--kwarg", "zone=3"))
    failing = run("providers", "test", "gce-bad", "--json")
    assert failing.returncode == 1
    checks = {c["check"]: c["ok"] for c in json.loads(failing.stdout)["checks"]}
    assert checks["required:project"] is False and checks["type:zone"] is False

    edit = run("providers", "edit")
    assert edit.returncode == 1
    assert "hide/unhide/remove/restore" in edit.stderr and "Traceback" not in edit.stderr


def test_secrets_and_modes(sqlite_server: Server, tmp_path: Path) -> None:
    s = sqlite_server
    ns = s.namespace()
    run = lambda *a, **kw: s.cli(*a, namespace=ns, **kw)  # noqa: E731
    out = _ok(
        run(
            "secrets",
            "add",
            "tok",
            "--kind",
            "token",
            "--value-stdin",
            stdin=PLAINTEXTS["token"] + "\n",
        )
    )
    assert PLAINTEXTS["token"] not in out
    assert run("secrets", "add", "tok2").returncode == 1  # no value given, no prompt
    dup = run("secrets", "add", "tok", "--value-stdin", stdin="x")
    assert dup.returncode == 1 and "--replace" in dup.stderr
    _ok(
        run(
            "secrets",
            "add",
            "tok",
            "--kind",
            "token",
            "--replace",
            "--value-stdin",
            stdin=PLAINTEXTS["token"],
        )
    )
    listing = _ok(run("secrets", "list"))
    assert listing.splitlines()[0].split() == ["NAME", "KIND", "UPDATED"] and "tok" in listing
    _ok(
        run(
            "providers",
            "add",
            "kube",
            "--launcher",
            "Kube",
            "--kwarg",
            'token={"$secret":"tok"}',
            "--kwarg",
            'tolerations=["a"]',
        )
    )
    refused = run("secrets", "remove", "tok")
    assert refused.returncode == 1 and "kube" in refused.stderr

    _ok(
        run(
            "modes",
            "add",
            "h100",
            "--field",
            "provider=kube",
            "--field",
            "instance_type=g5.xlarge",
            "--field",
            "image_id=ami-0abcdef1234567890",
            "--field",
            "runner=docker",
            "--field",
            "image=ghcr.io/lakeshore-py/cuda12.4-pytorch:2.4",
            "--field",
            "resources.gpu=1",
            "--field",
            'tolerations=["b"]',
        )
    )
    mode = json.loads(_ok(run("modes", "show", "h100", "--json")))
    assert (
        mode["backend"] == "fabric"
        and mode["runner"] == "docker"
        and mode["resources"] == {"gpu": 1}
    )
    assert mode["instance_type"] == "g5.xlarge" and mode["image_id"] == "ami-0abcdef1234567890"
    mode = json.loads(
        _ok(
            run(
                "modes",
                "update",
                "h100",
                "--field",
                "image_id=null",
                "--field",
                "timeout_s=600",
                "--json",
            )
        )
    )
    assert "image_id" not in mode and mode["timeout_s"] == 600
    assert "h100" in _ok(run("modes", "list"))
    preview = json.loads(_ok(run("modes", "preview", "h100", "--field", "context=prod", "--json")))
    assert preview["kwargs"] == {
        "token": {"$secret": "tok"},
        "tolerations": ["a", "b"],
        "instance_type": "g5.xlarge",
        "context": "prod",
    }
    assert preview["tags"]["lakeshore"] == "true" and preview["run"]["runner"] == "docker"
    text = _ok(run("modes", "preview", "h100"))
    assert "lakeshore-provider = kube" in text and "$secret:tok" in text
    _ok(run("modes", "remove", "h100"))
    assert run("modes", "show", "h100").returncode == 1
    _ok(run("secrets", "remove", "tok", "--force"))


def test_org_sibling_token_and_unreachable(sqlite_server: Server) -> None:
    s = sqlite_server
    org = "org-cli-siblings"
    a, b = s.namespace(org), s.namespace(org)
    tok = s.token_for(a)
    add = ("providers", "add", "shared", "--launcher", "SSH", "--kwarg", "host=h")
    refused = s.cli(*add, namespace=b, token=tok)  # a sibling reads, never writes
    assert refused.returncode == 1 and "read-only" in refused.stderr, refused.stderr
    _ok(s.cli(*add, namespace=b, token=s.token_for(b)))
    assert "shared" in _ok(s.cli("providers", "list", namespace=a, token=tok))
    denied = s.cli("providers", "list", namespace=s.namespace(), token=tok)
    assert denied.returncode == 1 and "403" in denied.stderr
    down = s.cli("providers", "list", "--server", "http://127.0.0.1:9", namespace=a)
    assert down.returncode == 1 and "unreachable" in down.stderr and "next:" in down.stderr


def test_dreamrc_lakeshore_section_drives_the_cli(sqlite_server: Server, tmp_path: Path) -> None:
    import os
    import subprocess

    from registry_harness import LAKESHORE

    s = sqlite_server
    ns = s.namespace()
    s.client().post(f"/api/namespaces/{ns}/providers", json={"name": "from-rc", "launcher": "Kube"})
    (tmp_path / "tok").write_text(s.token_for(ns) + "\n")
    project = tmp_path / "proj" / "sub"
    project.mkdir(parents=True)
    (tmp_path / "proj" / ".dreamrc").write_text(
        f"lakeshore:\n  url: {s.url}\n  namespace: {ns}\n  token_file: ../tok\n"
        "providers:\n  local: !providers.SSH {host: h}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LAKESHORE_", "DREAMRC"))}
    env["HOME"] = str(tmp_path)
    out = subprocess.run(
        [LAKESHORE, "providers", "list"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[1].split()[:3] == ["from-rc", "Kube", "direct"]
