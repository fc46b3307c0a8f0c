"""Nothing a tenant writes makes the control plane use its own files or credentials.

* every launcher's path-shaped kwargs, written with a namespace token (create, PATCH,
  a launch's runConfig, a secret's content): 422 naming the field;
* the SSH launcher against a real sshd: only the key from the secret and the host key
  stated as text; never the keys in the server user's ``~/.ssh``, its agent, its ssh
  config or a ``known_hosts`` file; a host key not stated is refused.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from dreamlake.controlplane.client import ApiFailure
from dreamlake.controlplane.launchers.errors import LaunchRejected
from dreamlake.controlplane.registry.server_files import FILE_KWARGS, server_file_fields
from sshd import skip_reason, start_sshd

SHARES_SERVER = True  # its tests keep to namespaces of their own: the session's server

BASE: dict[str, dict[str, Any]] = {
    "EC2": {"region": "us-east-1"},
    "GCE": {"project": "p", "zone": "z"},
    "Kube": {},
    "SSH": {"host": "127.0.0.1"},
    "SLURM": {"host": "127.0.0.1"},
}

KUBE_FILE_DOCS: list[tuple[dict[str, Any], str]] = [
    (
        {"users": [{"name": "u", "user": {"client-key": "/etc/ssh/ssh_host_ed25519_key"}}]},
        "kwargs.kubeconfig.users[0].user.client-key",
    ),
    (
        {"users": [{"name": "u", "user": {"exec": {"command": "sh", "args": ["-c", "id"]}}}]},
        "kwargs.kubeconfig.users[0].user.exec",
    ),
    (
        {"clusters": [{"name": "c", "cluster": {"certificate-authority": "/root/ca.crt"}}]},
        "kwargs.kubeconfig.clusters[0].cluster.certificate-authority",
    ),
    (
        {"users": [{"name": "u", "user": {"tokenFile": "/var/run/token"}}]},
        "kwargs.kubeconfig.users[0].user.tokenFile",
    ),
]


def _refused(call: Any, field: str) -> str:
    with pytest.raises(ApiFailure) as err:
        call()
    assert err.value.status == 422, err.value
    text = str(err.value)
    assert field in text, text
    return text


def _cases() -> list[tuple[str, str, Any]]:
    out: list[tuple[str, str, Any]] = []
    for launcher, names in FILE_KWARGS.items():
        out.extend((launcher, f"kwargs.{n}", {n: "/root/.ssh/id_ed25519"}) for n in names)
    out.append(("Kube", "kwargs.kubeconfig", {"kubeconfig": "/root/.kube/config"}))
    out.extend(("Kube", field, {"kubeconfig": doc}) for doc, field in KUBE_FILE_DOCS)
    out.append(("GCE", "kwargs.credentials", {"credentials": "/srv/gce/key.json"}))
    out.append(
        (
            "GCE",
            "kwargs.credentials.credential_source",
            {
                "credentials": {
                    "type": "external_account",
                    "credential_source": {"file": "/var/run/token"},
                }
            },
        )
    )
    return out


@pytest.mark.parametrize(("launcher", "field", "extra"), _cases())
def test_pure_rule_names_the_field(launcher: str, field: str, extra: dict[str, Any]) -> None:
    assert field in server_file_fields(launcher, {**BASE[launcher], **extra})
    assert server_file_fields(launcher, BASE[launcher]) == []


def test_content_is_not_a_file() -> None:
    doc = {"users": [{"name": "u", "user": {"token": "t", "client-key-data": "QUJD"}}]}
    assert server_file_fields("Kube", {"kubeconfig": doc}) == []
    assert server_file_fields("Kube", {"kubeconfig": {"$secret": "kc"}}) == []
    assert server_file_fields("GCE", {"credentials": "ya29.a0token"}) == []
    assert server_file_fields("GCE", {"credentials": {"type": "service_account"}}) == []
    assert server_file_fields("SSH", {"host_key": "ssh-ed25519 AAAA"}) == []


def test_every_launcher_refuses_path_kwargs_from_a_namespace_token(
    fresh_namespace: tuple[str, Any],
) -> None:
    ns, api = fresh_namespace
    p = f"/api/namespaces/{ns}"
    for i, (launcher, field, extra) in enumerate(_cases()):
        name = f"pf{i}"
        body = {"name": name, "launcher": launcher, "kwargs": {**BASE[launcher], **extra}}
        _refused(lambda b=body: api.request("POST", p + "/providers", b), field)
        # the same through PATCH on a clean row
        api.request(
            "POST",
            p + "/providers",
            {"name": name, "launcher": launcher, "kwargs": BASE[launcher]},
        )
        _refused(
            lambda n=name, e=extra: api.request("PATCH", p + f"/providers/{n}", {"kwargsPatch": e}),
            field,
        )
        _refused(
            lambda n=name, e={**BASE[launcher], **extra}: api.request(
                "PATCH", p + f"/providers/{n}", {"kwargs": e}
            ),
            field,
        )
        row = api.request("GET", p + f"/providers/{name}")
        assert row["kwargs"] == BASE[launcher], row  # nothing of it was stored


def test_a_launch_cannot_add_a_path_through_its_run_config(
    fresh_namespace: tuple[str, Any],
) -> None:
    ns, api = fresh_namespace
    p = f"/api/namespaces/{ns}"
    api.request(
        "POST",
        p + "/providers",
        {"name": "rc", "launcher": "SSH", "dispatch": "direct", "kwargs": BASE["SSH"]},
    )
    run = {"provider": "rc", "key_file": "/root/.ssh/id_ed25519", "known_hosts": "/tmp/x/kh"}
    text = _refused(
        lambda: api.request("POST", p + "/launch", {"provider": "rc", "runConfig": run}),
        "kwargs.key_file",
    )
    assert "kwargs.known_hosts" in text
    assert not Path("/tmp/x/kh").exists()


def test_a_secret_holding_a_kubeconfig_that_runs_a_program_is_refused_at_launch(
    fresh_namespace: tuple[str, Any],
) -> None:
    ns, api = fresh_namespace
    p = f"/api/namespaces/{ns}"
    doc, field = KUBE_FILE_DOCS[1]
    api.request("POST", p + "/secrets", {"name": "kc", "kind": "generic", "value": json.dumps(doc)})
    api.request(
        "POST",
        p + "/providers",
        {"name": "kx", "launcher": "Kube", "kwargs": {"kubeconfig": {"$secret": "kc"}}},
    )
    _refused(
        lambda: api.request(
            "POST", p + "/launch", {"provider": "kx", "runConfig": {"provider": "kx"}}
        ),
        field,
    )


# -- the SSH launcher over a real sshd ----------------------------------------------


@pytest.fixture
def sshd(tmp_path: Path) -> Any:
    why = skip_reason()
    if why:
        pytest.skip(why)
    server = start_sshd(tmp_path / "sshd")
    yield server
    server.stop()


def _run(kwargs: dict[str, Any], host: str) -> str:
    from dreamlake.controlplane.launchers import sshconn

    with sshconn.session(kwargs, host) as shell:
        return str(shell.run("echo ok").stdout.strip())


@pytest.mark.needs_sshd
def test_ssh_session_uses_the_secret_key_and_the_stated_host_key(sshd: Any) -> None:
    kwargs = {
        "user": "root",
        "port": sshd.port,
        "private_key": sshd.client_key.read_text(),
        "host_key": sshd.host_key,
    }
    assert _run(kwargs, "127.0.0.1") == "ok"
    # a known_hosts line (host patterns first) works the same
    line = f"[127.0.0.1]:{sshd.port} {sshd.host_key}"
    assert _run({**kwargs, "host_key": line}, "127.0.0.1") == "ok"


@pytest.mark.needs_sshd
def test_a_pool_states_every_hosts_key_together(sshd: Any, tmp_path: Path) -> None:
    other = start_sshd(tmp_path / "other")
    try:
        (other.dir / "authorized_keys").write_text(sshd.client_key.with_suffix(".pub").read_text())
        kwargs = {
            "user": "root",
            "private_key": sshd.client_key.read_text(),
            "host_key": sshd.host_key + other.host_key,
        }
        for server in (sshd, other):
            assert _run(kwargs, f"127.0.0.1:{server.port}") == "ok"
        with pytest.raises(LaunchRejected, match="not one of the host keys stated"):
            _run({**kwargs, "host_key": sshd.host_key}, f"127.0.0.1:{other.port}")
    finally:
        other.stop()


@pytest.mark.needs_sshd
def test_ssh_session_refuses_a_host_key_not_stated(sshd: Any, tmp_path: Path) -> None:
    base = {"user": "root", "port": sshd.port, "private_key": sshd.client_key.read_text()}
    with pytest.raises(LaunchRejected, match="host key"):
        _run(base, "127.0.0.1")
    other = (sshd.dir / "wrong_ed25519.pub").read_text()
    with pytest.raises(LaunchRejected, match="not one of the host keys stated"):
        _run({**base, "host_key": other}, "127.0.0.1")
    assert sshd.connections() >= 2


@pytest.mark.needs_sshd
def test_ssh_session_never_uses_the_servers_own_keys_agent_or_files(
    sshd: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server user's own ~/.ssh holds a key the host accepts, and its ssh config
    # names it; an agent holds it too. None of them may be used.
    home = tmp_path / "server-home"
    (home / ".ssh").mkdir(parents=True)
    for name in ("id_ed25519", "id_ed25519.pub"):
        src = sshd.client_key if name == "id_ed25519" else sshd.client_key.with_suffix(".pub")
        shutil.copy(src, home / ".ssh" / name)
    (home / ".ssh" / "id_ed25519").chmod(0o600)
    (home / ".ssh" / "config").write_text(f"Host *\n  IdentityFile {sshd.client_key}\n")
    (home / ".ssh" / "known_hosts").write_text(f"[127.0.0.1]:{sshd.port} {sshd.host_key}")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("DREAMLAKE_SSH_IDENTITY_FILE", str(sshd.client_key))
    monkeypatch.setenv("DREAMLAKE_SSH_KNOWN_HOSTS", str(home / ".ssh" / "known_hosts"))
    agent = None
    if shutil.which("ssh-agent") and shutil.which("ssh-add"):
        sock = tmp_path / "agent.sock"
        agent = subprocess.Popen(
            ["ssh-agent", "-D", "-a", str(sock)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(100):
            if sock.exists():
                break
            subprocess.run(["sleep", "0.05"], check=False)
        env = {**os.environ, "SSH_AUTH_SOCK": str(sock)}
        subprocess.run(["ssh-add", str(sshd.client_key)], env=env, check=True, capture_output=True)
        monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
    try:
        kwargs = {"user": "root", "port": sshd.port, "host_key": sshd.host_key}
        with pytest.raises(LaunchRejected, match="no private_key"):
            _run(kwargs, "127.0.0.1")
        # a key the host does not accept: no fallback to the agent or ~/.ssh
        wrong = {**kwargs, "private_key": sshd.wrong_key.read_text()}
        with pytest.raises(LaunchRejected, match="refused the ssh key"):
            _run(wrong, "127.0.0.1")
        # with the host key unstated, the server's known_hosts does not vouch for it
        with pytest.raises(LaunchRejected, match="host key"):
            unstated = {"user": "root", "port": sshd.port}
            _run({**unstated, "private_key": sshd.client_key.read_text()}, "127.0.0.1")
        # a stored row from before the rule: the launcher itself refuses the file
        with pytest.raises(LaunchRejected, match=r"kwargs\.key_file"):
            _run({**kwargs, "key_file": str(sshd.client_key)}, "127.0.0.1")
        kh = tmp_path / "new" / "dir" / "kh"
        with pytest.raises(LaunchRejected, match=r"kwargs\.known_hosts"):
            _run({**kwargs, "known_hosts": str(kh)}, "127.0.0.1")
        assert not kh.parent.exists()
    finally:
        if agent is not None:
            agent.terminate()
            agent.wait(timeout=5)
