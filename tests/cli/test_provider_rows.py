"""The row CRUD verbs on the ``provider`` group, through the ``dreamlake`` console
script's main (each command a process of its own, ``tests/cli_fork.py``) against a
real ``lakeshore serve`` on 127.0.0.1: ``create -f`` (YAML and
JSON), ``show``, ``update`` (deep merge, wholesale replace, immutable launcher),
``$secret`` markers, and ``delete`` of a row (soft, asked for like every delete)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_fork import run_module
from dreamlake.controlplane.client import Client
from dreamlake.engine.verbs.demo import EmbeddedServer, start_server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedServer]:
    s = start_server(tmp_path_factory.mktemp("lakeshore"))
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def env(srv: EmbeddedServer, tmp_path: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("LAKESHORE_")}
    e.update(srv.env(), HOME=str(tmp_path))
    e.pop("DREAMRC", None)
    return e


@pytest.fixture
def admin(srv: EmbeddedServer) -> Client:
    return Client(srv.url, srv.admin_token_file.read_text().strip())


def dl(env: dict[str, str], cwd: Path, *args: str, json_out: bool = True) -> tuple[int, Any]:
    # The console script's main, as a process forked from a server with the imports
    # done (tests/cli_fork.py): the same process boundary without a fresh interpreter.
    out = run_module(
        "dreamlake.cli.entry", [*args, *(["--json"] if json_out else [])], cwd=cwd, env=env,
        text=True, stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip
    if not json_out:
        return out.returncode, out.stdout + out.stderr
    return out.returncode, json.loads(out.stdout)


def test_create_show_update_delete_a_row(
    env: dict[str, str], admin: Client, tmp_path: Path
) -> None:
    f = tmp_path / "aws.yaml"
    f.write_text(
        "name: cli-aws\nlauncher: EC2\nkwargs:\n  region: us-east-1\n  tags:\n    team: ml\n"
    )
    rc, row = dl(env, tmp_path, "provider", "create", "-f", str(f))
    assert rc == 0 and row["name"] == "cli-aws" and row["dispatch"] == "daemon"
    assert admin.provider_row("cli-aws")["kwargs"] == {
        "region": "us-east-1",
        "tags": {"team": "ml"},
    }

    rc, again = dl(env, tmp_path, "provider", "create", "-f", str(f))
    assert rc == 1 and again["kind"] == "conflict" and again["nextAction"]["command"]

    rc, shown = dl(env, tmp_path, "provider", "show", "cli-aws")
    assert rc == 0 and shown["launcher"] == "EC2" and "lifecycle" not in shown

    # --kwarg deep-merges, KEY=null deletes
    rc, row = dl(
        env,
        tmp_path,
        "provider",
        "update",
        "cli-aws",
        "--kwarg",
        "tags.owner=me",
        "--kwarg",
        "region=null",
    )
    assert rc == 0 and row["kwargs"] == {"tags": {"team": "ml", "owner": "me"}}
    # --kwargs-file replaces wholesale
    g = tmp_path / "k.json"
    g.write_text(json.dumps({"region": "eu-west-1"}))
    rc, row = dl(env, tmp_path, "provider", "update", "-n", "cli-aws", "--kwargs-file", str(g))
    assert rc == 0 and row["kwargs"] == {"region": "eu-west-1"}
    # the launcher is immutable
    rc, err = dl(env, tmp_path, "provider", "update", "cli-aws", "--launcher", "GCE")
    assert rc == 1 and "immutable" in err["error"] and err["nextAction"]["kind"] == "run"

    # delete of a row: cancelled without a terminal, soft with --yes
    rc, res = dl(env, tmp_path, "provider", "delete", "cli-aws")
    assert rc == 0 and res["status"] == "needs_input" and res["nextAction"]["approval"] is True
    assert admin.provider_row("cli-aws")["deletedAt"] is None
    rc, res = dl(env, tmp_path, "provider", "delete", "cli-aws", "--yes")
    assert rc == 0 and res["status"] == "exists", res
    assert admin.provider_row("cli-aws")["deletedAt"]  # kept, tombstoned
    rc, text = dl(env, tmp_path, "provider", "show", "cli-aws", json_out=False)
    assert rc == 0 and "deleted" in text.lower()


def test_secret_markers_must_name_a_secret(
    env: dict[str, str], admin: Client, tmp_path: Path
) -> None:
    f = tmp_path / "p.json"
    f.write_text(
        json.dumps(
            {
                "name": "cli-sec",
                "launcher": "EC2",
                "kwargs": {"aws_credentials": {"$secret": "aws-main"}},
            }
        )
    )
    rc, err = dl(env, tmp_path, "provider", "create", "-f", str(f))
    assert rc == 1 and err["kind"] == "invalid" and "aws-main" in err["error"]
    admin.request(
        "POST",
        "/api/namespaces/default/secrets",
        {"name": "aws-main", "kind": "aws_keypair", "value": "AKIAEXAMPLE:very-secret"},
    )
    rc, row = dl(env, tmp_path, "provider", "create", "-f", str(f))
    assert rc == 0 and row["kwargs"]["aws_credentials"] == {"$secret": "aws-main"}
    rc, text = dl(env, tmp_path, "provider", "show", "cli-sec", json_out=False)
    assert "very-secret" not in text


def test_bad_row_files(env: dict[str, str], tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("name: x\nlauncher: ec2\n")
    rc, err = dl(env, tmp_path, "provider", "create", "-f", str(f))
    assert rc == 1 and "not one of" in err["error"]
    f.write_text("name: x\nlauncher: EC2\nregion: us-east-1\n")
    rc, err = dl(env, tmp_path, "provider", "create", "-f", str(f))
    assert rc == 1 and "unknown field" in err["error"]
    rc, err = dl(env, tmp_path, "provider", "create", "-f", str(tmp_path / "missing.yaml"))
    assert rc == 1 and err["nextAction"]


def test_show_of_a_lifecycle_provider_and_its_row_is_one_provider(
    env: dict[str, str], tmp_path: Path
) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    rc, _out = dl(env, proj, "provider", "create", "-n", "cli-both", "--provider", "ssh")
    assert rc == 0
    f = tmp_path / "row.yaml"
    f.write_text("name: cli-both\nlauncher: SSH\nkwargs:\n  host: box\n")
    assert dl(env, proj, "provider", "create", "-f", str(f))[0] == 0
    rc, shown = dl(env, proj, "provider", "show", "cli-both")
    assert rc == 0 and shown["launcher"] == "SSH"
    assert shown["lifecycle"]["status"] == "needs_input" and shown["lifecycle"]["vendor"] == "ssh"
    rc, only_local = dl(env, proj, "provider", "show", "-n", "nowhere")
    assert rc == 1 and only_local["kind"] == "unknown_provider"


def test_delete_revokes_the_providers_daemon_tokens(
    env: dict[str, str], admin: Client, srv: EmbeddedServer, tmp_path: Path
) -> None:
    """A removed provider's daemon token dies with it: it no longer answers
    ``whoami`` and cannot register a ghost worker."""
    from dreamlake.controlplane.client import ApiFailure

    admin.create_provider_row({"name": "cli-gone", "launcher": "SSH", "kwargs": {"host": "h"}})
    token = admin.create_token(
        "default", label="nymph cli-gone on h", scope="daemon", provider="cli-gone", host="h"
    )
    daemon = Client(srv.url, token)
    assert daemon.register("cli-gone", "i-1")["workerId"]
    rc, text = dl(env, tmp_path, "provider", "delete", "cli-gone", "--yes", json_out=False)
    assert rc == 0 and "revoked 1 daemon token of 'cli-gone'" in text, text
    for call in (daemon.whoami, lambda: daemon.register("cli-gone", "ghost")):
        with pytest.raises(ApiFailure) as err:
            call()
        assert err.value.status == 401
