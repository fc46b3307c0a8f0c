"""The SSH launcher names a daemon on its host by its provider's identity, by the rule
``dreamlake provider connect`` follows (``engine.daemon.key``): the folder
``~/.dreamlake/nymph/<key>`` and the tmux session ``nymph-<key>``, never the
provider's name. On real sshd hosts and a real ``lakeshore serve``:

* a row with an identity (a lifecycle provider's ``prv-…``): its daemon is where
  ``connect`` would put that provider's, and its ``nymph.json`` names the identity;
* a row with none: keyed by its place on this control plane, not by its name;
* an install an older server made under the name (its ``nymph.json`` names this
  instance as its worker) is still seen running and is stopped by terminate.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from sshd import skip_reason
from test_ssh_launch_tracking import _hosts, _kill_tmux, _provider, _start_daemon
from tracking_check import P, agree, wait

pytestmark = [pytest.mark.slow, pytest.mark.needs_sshd]
LIVE = 2.0


def _sessions(host: Any) -> set[str]:
    env = {"TMUX_TMPDIR": str(host.dir / "tmux"), "PATH": "/usr/bin:/bin"}
    res = subprocess.run(
        ["tmux", "list-sessions", "-F", "#{session_name}"], env=env, capture_output=True, text=True
    )
    return set(res.stdout.split())


def _nymph(host: Any) -> Path:
    return Path(host.home) / ".dreamlake" / "nymph"


def test_the_daemon_is_keyed_by_the_providers_identity(start_server: Any, tmp_path: Path) -> None:
    why = skip_reason()
    if why:
        pytest.skip(why)
    from dreamlake.engine.daemon.key import DaemonKey, key_of

    srv = start_server(live_seconds=LIVE, env={"LAKESHORE_QUEUE_TICK": "0.5"})
    api = srv.admin
    hosts = _hosts(tmp_path, 2)
    a, b = hosts
    label_a = f"root@127.0.0.1:{a.port}"
    try:
        # -- a row a lifecycle provider owns: connect's key for that provider ----------
        owned = _provider(api, [a], tmp_path, "daemon")
        identity = "prv-0123456789abcdef"
        api.request("PATCH", P + f"/providers/{owned}", {"identity": identity})
        api.request("POST", P + "/launch", {"provider": owned, "clientToken": "k1"})
        connect_would = DaemonKey(owned, identity)
        assert connect_would.key == identity
        assert wait(lambda: agree(api, srv.data_dir, owned, LIVE)["claims"] == [label_a], 30)
        assert _sessions(a) == {connect_would.session}
        folder = _nymph(a) / identity
        config = json.loads((folder / "nymph.json").read_text())
        assert config["identity"] == identity and config["provider"] == owned
        assert not (_nymph(a) / owned).exists()
        claims = api.request("GET", P + f"/providers/{owned}/claims", query={"identity": identity})
        assert claims["live"] == 1
        api.request("DELETE", P + f"/instances/{label_a}")
        assert _sessions(a) == set()

        # -- a row with no identity: keyed by namespace and name, not the name alone ----
        bare = _provider(api, [b], tmp_path, "daemon")
        api.request("POST", P + "/launch", {"provider": bare, "clientToken": "k2"})
        key = key_of(f"lakeshore:default/{bare}")
        assert key != bare
        label_b = f"root@127.0.0.1:{b.port}"
        assert wait(lambda: agree(api, srv.data_dir, bare, LIVE)["claims"] == [label_b], 30)
        assert _sessions(b) == {f"nymph-{key}"}
        assert (_nymph(b) / key / "nymph.json").is_file()
        assert not (_nymph(b) / bare).exists()
        api.request("DELETE", P + f"/instances/{label_b}")
        assert _sessions(b) == set()
    finally:
        for h in hosts:
            _kill_tmux(h)
            h.stop()


def test_a_name_keyed_install_of_an_older_server_is_still_found(
    app_client: tuple[Any, Any], tmp_path: Path
) -> None:
    """A daemon an older server installed under the provider's name (its nymph.json
    names the instance as its worker): ``describe`` sees it running and terminate
    stops it."""
    why = skip_reason()
    if why:
        pytest.skip(why)
    from dreamlake.controlplane.launch.orders import _order_for
    from dreamlake.controlplane.launchers import ssh
    from dreamlake.controlplane.registry import service as registry
    from dreamlake.controlplane.registry.crypto import SecretBox, load_or_create_key

    class Api:
        def request(self, method: str, path: str, body: Any = None) -> Any:
            r = client.request(method, path, json=body)
            assert r.status_code < 300, r.text
            return r.json()

    client, app = app_client
    app.state.queue_loop.stop()
    (host,) = _hosts(tmp_path, 1)
    label = f"root@127.0.0.1:{host.port}"
    try:
        prov = _provider(Api(), [host], tmp_path, "daemon")
        # as an older server left it: the provider's name, this instance as the worker
        _start_daemon("http://127.0.0.1:9", host, prov, tmp_path, "older-token")
        assert wait(lambda: _sessions(host) == {f"nymph-{prov}"}, 10)
        box = getattr(app.state, "registry_secret_box", None) or SecretBox(
            load_or_create_key(app.state.settings.data_dir)
        )
        with app.state.sessionmaker() as s:
            from dreamlake.controlplane.models import Namespace
            from sqlalchemy import select

            ns = s.scalar(select(Namespace).where(Namespace.name == "default"))
            assert ns is not None
            scope = registry.Scope(namespace=ns, org_ids=[ns.id])
            order = _order_for(s, scope, box, prov, [])
        assert ssh.describe(order, [label]) == {label: "running"}
        ssh.terminate(order, [label])
        assert wait(lambda: _sessions(host) == set(), 10)
        assert ssh.describe(order, [label]) == {label: "gone"}
    finally:
        _kill_tmux(host)
        host.stop()
