"""SSH launch tracking on real components: two real sshd hosts on 127.0.0.1 (each
with a tmux server of its own), a real ``lakeshore serve``, the engine's installer
and the real daemon.

* relaunch on a reused host: the terminated instance stays history, the new launch
  gets a new row, terminate stops it;
* a two-host pool filled evenly (one instance per host) by a queue, and drained;
* ``direct`` dispatch: the command runs on the host over SSH and its outcome
  (exit status, output tail) lands on the instance row;
* an orphan: a daemon holding an instance token no live row holds is listed as an
  orphan, told to stop, and gone.

At every step ``instances list``, ``claims`` and the database agree (tracking_check).
"""

from __future__ import annotations

import secrets
import subprocess
from pathlib import Path
from typing import Any

import pytest
from sshd import skip_reason, start_sshd
from tracking_check import P, agree, wait

pytestmark = [pytest.mark.slow, pytest.mark.needs_sshd]
LIVE = 2.0


def _hosts(tmp_path: Path, n: int) -> list[Any]:
    hosts = []
    for i in range(n):
        base = tmp_path / f"host{i}"
        tmux = base / "tmux"
        tmux.mkdir(parents=True)
        hosts.append(start_sshd(base, env={"TMUX_TMPDIR": str(tmux)}))
    return hosts


def _tmux_alive(host: Any, provider: str) -> bool:
    """A daemon of ``provider`` runs on ``host``: under the key a launch gives it (the
    provider row has no identity: its namespace and name), or under the name (one
    started by hand with the engine's installer, as an older server did)."""
    from dreamlake.engine.daemon.key import key_of

    env = {"TMUX_TMPDIR": str(host.dir / "tmux"), "PATH": "/usr/bin:/bin"}
    for key in (key_of(f"lakeshore:default/{provider}"), provider):
        res = subprocess.run(
            ["tmux", "has-session", "-t", f"=nymph-{key}"], env=env, capture_output=True
        )
        if res.returncode == 0:
            return True
    return False


def _ended(pid: int) -> bool:
    """The process is gone (or a zombie nobody reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def _kill_tmux(host: Any) -> None:
    env = {"TMUX_TMPDIR": str(host.dir / "tmux"), "PATH": "/usr/bin:/bin"}
    subprocess.run(["tmux", "kill-server"], env=env, capture_output=True)


def _provider(api: Any, hosts: list[Any], tmp_path: Path, dispatch: str, **kw: Any) -> str:
    name = f"pool-{secrets.token_hex(3)}"
    key = hosts[0].client_key.read_text()
    for h in hosts[1:]:  # one key for the pool: every host accepts the first's
        (h.dir / "authorized_keys").write_text(hosts[0].client_key.with_suffix(".pub").read_text())
    api.request("POST", P + "/secrets", {"name": f"{name}-key", "kind": "ssh_key", "value": key})
    kwargs = {
        "hosts": [f"127.0.0.1:{h.port}" for h in hosts],
        "user": "root",
        "private_key": {"$secret": f"{name}-key"},
        "host_key": "".join(h.host_key for h in hosts),
        **kw,
    }
    body = {"name": name, "launcher": "SSH", "kwargs": kwargs, "dispatch": dispatch}
    api.request("POST", P + "/providers", body)
    return name


def test_relaunch_pool_and_orphan_on_real_sshd_hosts(start_server: Any, tmp_path: Path) -> None:
    why = skip_reason()
    if why:
        pytest.skip(why)
    srv = start_server(
        live_seconds=LIVE,
        env={"LAKESHORE_QUEUE_TICK": "0.5", "LAKESHORE_QUEUE_START_TIMEOUT": "120"},
    )
    api = srv.admin
    hosts = _hosts(tmp_path, 2)
    a, b = hosts
    label_a, label_b = (f"root@127.0.0.1:{h.port}" for h in hosts)
    try:
        prov = _provider(api, hosts, tmp_path, "daemon")

        def check() -> dict[str, Any]:
            return agree(api, srv.data_dir, prov, LIVE)

        # -- relaunch on a reused host -------------------------------------------------
        first = api.request("POST", P + "/launch", {"provider": prov, "clientToken": "r1"})
        (inst,) = first["instances"]
        assert inst["id"] == label_a and inst["terminatedAt"] is None
        assert wait(lambda: check()["claims"] == [label_a], 30), check()
        assert check()["instances"] == [label_a]
        gone = api.request("DELETE", P + f"/instances/{label_a}")
        assert gone["state"] == "terminated"
        seen = check()  # out of the claims at once, not when the beats lapse
        assert seen["instances"] == [] and seen["claims"] == [], seen
        assert not _tmux_alive(a, prov)

        again = api.request("POST", P + "/launch", {"provider": prov, "clientToken": "r2"})
        (inst2,) = again["instances"]
        assert inst2["id"] == label_a and inst2["state"] == "running"
        assert inst2["terminatedAt"] is None and inst2["clientToken"] == "r2"
        assert wait(lambda: check()["claims"] == [label_a], 30), check()
        seen = check()
        assert seen["instances"] == [label_a] and seen["orphans"] == []
        assert [r[1] for r in seen["all"]] == ["terminated", "running"]  # history kept
        assert api.request("DELETE", P + f"/instances/{label_a}")["state"] == "terminated"
        assert check()["claims"] == [] and not _tmux_alive(a, prov)

        # -- a two-host pool, filled evenly by a queue and drained -----------------------
        api.request(
            "POST",
            P + "/queues",
            {"name": "pool", "provider": prov, "max": 2, "idleSeconds": 3},
        )
        items = [
            api.request(
                "POST",
                P + f"/providers/{prov}/work",
                {"command": f"sleep 4; echo item-{n}", "queue": "pool"},
            )
            for n in range(2)
        ]

        def both_up() -> dict[str, Any] | None:
            seen = check()
            want = sorted([label_a, label_b])
            ok = sorted(seen["claims"]) == want and sorted(seen["instances"]) == want
            return seen if ok else None

        seen = wait(both_up, 90)
        assert seen, (check(), api.request("GET", P + "/queues/pool/status")["events"])
        assert sorted(seen["instances"]) == sorted([label_a, label_b])  # one per host

        def done() -> bool:
            states = [api.request("GET", P + f"/work/{w['id']}")["state"] for w in items]
            return all(s == "succeeded" for s in states)

        assert wait(done, 90), [api.request("GET", P + f"/work/{w['id']}") for w in items]
        outputs = {api.request("GET", P + f"/work/{w['id']}")["outputTail"].strip() for w in items}
        assert outputs == {"item-0", "item-1"}
        drained = wait(lambda: (s := check())["instances"] == [] and s["claims"] == [] and s, 60)
        assert drained, (check(), api.request("GET", P + "/queues/pool/status")["events"])
        assert not _tmux_alive(a, prov) and not _tmux_alive(b, prov)
        api.request("DELETE", P + "/queues/pool")

        # -- an orphan: a daemon holding an instance token no live row holds ----------------
        # (what a relaunch left before a reused host got a row of its own)
        token = _stray_daemon(srv, a, prov, tmp_path)
        orphaned = wait(lambda: (s := check())["orphans"] and s, 30)
        assert orphaned and orphaned["orphans"] == [label_a], check()
        assert orphaned["instances"] == []
        stopped = wait(lambda: not _tmux_alive(a, prov), 30)
        assert stopped, "the orphan's daemon was not stopped"
        assert wait(lambda: (s := check())["orphans"] == [] and s["claims"] == [], 30), check()
        from dreamlake.controlplane.client import ApiFailure, Client

        with pytest.raises(ApiFailure) as refused:
            Client(srv.url, token).whoami()
        assert refused.value.status == 401
        events = api.request("GET", P + "/instances", query={"all": "true"})
        assert [i["state"] for i in events["instances"]].count("terminated") >= 2
    finally:
        for h in hosts:
            _kill_tmux(h)
            h.stop()


def _stray_daemon(srv: Any, host: Any, provider: str, tmp_path: Path) -> str:
    """Install and start a daemon on ``host`` with a fresh instance token that no
    instance row holds, through the engine's own installer (as the launcher does)."""
    from dreamlake.controlplane.launch.tokens import _mint
    from dreamlake.controlplane.models import Namespace
    from dreamlake.controlplane.server.app import create_app  # noqa: F401  (models)
    from sqlalchemy import create_engine, select
    from sqlalchemy.orm import Session

    engine = create_engine(f"sqlite:///{srv.data_dir / 'lakeshore.db'}")
    with Session(engine) as s:
        ns = s.scalar(select(Namespace).where(Namespace.name == "default"))
        assert ns is not None
        token, _ = _mint(s, ns.id, f"instance {provider} stray-0", provider)
        s.commit()
    engine.dispose()
    _start_daemon(srv.url, host, provider, tmp_path, token)
    return token


def _start_daemon(url: str, host: Any, provider: str, tmp_path: Path, token: str) -> None:
    """Start a daemon of ``provider`` on ``host`` with the engine's installer."""
    from dreamlake.engine.daemon import install
    from dreamlake.engine.daemon import start as supervise
    from dreamlake.engine.remote import open_ssh
    from dreamlake.engine.remote.ssh import SSHTarget

    target = SSHTarget(
        "127.0.0.1",
        "root",
        host.port,
        identity_file=str(host.client_key),
        known_hosts=str(tmp_path / "known_hosts"),
    )
    shell = open_ssh(target)
    try:
        label = f"root@127.0.0.1:{host.port}"
        cfg = install.DaemonConfig(
            provider=provider,
            server=url,
            namespace="default",
            token=token,
            queues=(),
            worker_name=label,
        )
        inst = install.install(shell, cfg)
        caps = supervise.detect(shell)
        sup = supervise.choose(caps)
        assert sup is not None
        spec = supervise.DaemonSpec(
            provider=provider,
            run_script=inst.run_script,
            workdir=inst.dir,
            log=inst.log,
            user=caps.user,
        )
        supervise.start(shell, spec, sup, caps)
    finally:
        shell.close()


def _session_pid(host: Any, provider: str) -> str:
    env = {"TMUX_TMPDIR": str(host.dir / "tmux"), "PATH": "/usr/bin:/bin"}
    res = subprocess.run(
        ["tmux", "list-panes", "-t", f"=nymph-{provider}", "-F", "#{pane_pid}"],
        env=env,
        capture_output=True,
        text=True,
    )
    return res.stdout.strip()


def test_a_launch_never_installs_over_a_daemon_it_did_not_launch(
    app_client: tuple[Any, Any], tmp_path: Path
) -> None:
    """Host A of the pool already runs a daemon of the provider that no live instance
    row holds (someone's, or one the control plane lost track of): a launch goes to
    host B instead, and the next is refused with what to do; A's daemon keeps running,
    the same process."""
    why = skip_reason()
    if why:
        pytest.skip(why)

    class Api:
        def request(self, method: str, path: str, body: Any = None) -> Any:
            r = client.request(method, path, json=body)
            assert r.status_code < 300, r.text
            return r.json()

    client, app = app_client
    app.state.queue_loop.stop()
    hosts = _hosts(tmp_path, 2)
    a, b = hosts
    try:
        prov = _provider(Api(), hosts, tmp_path, "daemon")
        # its server is nowhere: the daemon just keeps retrying, alive under tmux
        _start_daemon("http://127.0.0.1:9", a, prov, tmp_path, "someone-elses-token")
        assert wait(lambda: _tmux_alive(a, prov), 10)
        before = _session_pid(a, prov)
        out = client.post(P + "/launch", json={"provider": prov})
        assert out.status_code == 201, out.text
        assert [i["id"] for i in out.json()["instances"]] == [f"root@127.0.0.1:{b.port}"]
        refused = client.post(P + "/launch", json={"provider": prov})
        assert refused.status_code == 422, refused.text
        assert f"root@127.0.0.1:{a.port}" in refused.json()["detail"]
        assert _tmux_alive(a, prov) and _session_pid(a, prov) == before
        token = (a.home / ".dreamlake" / "nymph" / prov / "token").read_text()
        assert token == "someone-elses-token"  # not even its files were touched
    finally:
        for h in hosts:
            _kill_tmux(h)
            h.stop()


def test_direct_dispatch_runs_the_command_on_the_hosts(start_server: Any, tmp_path: Path) -> None:
    """``lakeshore launch --command`` on a direct SSH pool: each run goes to the least
    loaded host, nothing is left running there, and the exit status and output tail
    are the instance's outcome. A host holds ``instances_per_host`` runs at most."""
    why = skip_reason()
    if why:
        pytest.skip(why)
    import json

    from lakeshore_fixtures import clean_env, lakeshore_argv

    srv = start_server(live_seconds=LIVE)
    api = srv.admin
    hosts = _hosts(tmp_path, 2)
    try:
        prov = _provider(api, hosts, tmp_path, "direct", instances_per_host=1)
        auth = ["--server", srv.url, "--token-file", str(srv.data_dir / "admin.token")]

        def launch(command: str) -> Any:
            return subprocess.run(
                [*lakeshore_argv(), "launch", "-p", prov, "--command", command, "--json", *auth],
                capture_output=True,
                text=True,
                env=clean_env(),
                timeout=120,
            )

        ran = launch("echo hello from $(hostname) > /dev/null; echo out-one; sleep 8")
        assert ran.returncode == 0, ran.stderr
        (one,) = json.loads(ran.stdout)["instances"]
        assert one["state"] == "running" and one["details"]["dispatch"] == "direct"
        two_out = launch("echo out-two; sleep 8; exit 3")
        assert two_out.returncode == 0, two_out.stderr
        (two,) = json.loads(two_out.stdout)["instances"]
        # spread: one run per host
        assert {one["id"].split("/")[0], two["id"].split("/")[0]} == {
            f"root@127.0.0.1:{h.port}" for h in hosts
        }
        check = agree(api, srv.data_dir, prov, LIVE)
        assert check["claims"] == []  # direct leaves no daemon
        # both hosts are full (one run each): a third is refused with what to do
        third = launch("true")
        assert third.returncode != 0 and "room for 0" in third.stderr, third.stderr

        def ended() -> dict[str, Any] | None:
            listed = api.request("GET", P + "/instances", query={"all": "true"})["instances"]
            mine = {i["id"]: i for i in listed if i["provider"] == prov}
            return mine if all(i["terminatedAt"] for i in mine.values()) else None

        done = wait(ended, 60)
        assert done, api.request("GET", P + "/instances", query={"all": "true"})
        assert done[one["id"]]["state"] == "succeeded"
        assert done[one["id"]]["details"]["outcome"]["exitCode"] == 0
        assert done[one["id"]]["details"]["outcome"]["outputTail"].strip() == "out-one"
        assert done[two["id"]]["state"] == "failed"
        assert done[two["id"]]["details"]["outcome"] == {"exitCode": 3, "outputTail": "out-two\n"}
        assert agree(api, srv.data_dir, prov, LIVE)["instances"] == []
        shown = subprocess.run(
            [*lakeshore_argv(), "instances", "list", "--all", "-p", prov, *auth],
            capture_output=True,
            text=True,
            env=clean_env(),
            timeout=60,
        )
        assert "failed  exit 3" in shown.stdout and "succeeded  exit 0" in shown.stdout, shown
        # the hosts have room again
        again = launch("sleep 30")
        (long,) = json.loads(again.stdout)["instances"]
        gone = api.request("DELETE", P + f"/instances/{long['id']}")
        assert gone["state"] == "terminated"
        host = next(h for h in hosts if long["id"].startswith(f"root@127.0.0.1:{h.port}/"))
        folder = host.home / ".lakeshore" / "runs" / long["id"].split("/", 1)[1]
        assert wait(lambda: (folder / "rc").exists(), 10)
        pid = int((folder / "pid").read_text())
        assert wait(lambda: _ended(pid), 10), "the run was not stopped"
    finally:
        for h in hosts:
            h.stop()
