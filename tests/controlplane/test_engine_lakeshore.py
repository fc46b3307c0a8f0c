"""engine.lakeshore: where the control plane is (env, .dreamrc, embedded default) and
the bounded claims fetch against a real server (None when it cannot answer)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from pathlib import Path

import pytest
from dreamlake.engine.contract.result import Claim
from dreamlake.engine.world import lakeshore
from dreamlake.engine.world.lakeshore import (
    DEFAULT_NAMESPACE,
    EMBEDDED_URL,
    ControlPlane,
    fetch_claims,
    resolve_control_plane,
)
from lakeshore_fixtures import ServerProc, free_port

SHARES_SERVER = True  # its tests keep to names of their own: the session's server


@pytest.fixture
def no_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for k in (
        "LAKESHORE_URL",
        "LAKESHORE_NAMESPACE",
        "LAKESHORE_TOKEN",
        "LAKESHORE_TOKEN_FILE",
        "DREAMRC",
    ):
        monkeypatch.delenv(k, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    data = tmp_path / "data"
    monkeypatch.setenv("LAKESHORE_DATA_DIR", str(data))
    return data


def test_embedded_default_uses_the_admin_token_file(no_env: Path, tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    cp = resolve_control_plane(proj)
    assert cp == ControlPlane(
        url=EMBEDDED_URL, namespace=DEFAULT_NAMESPACE, token=None, source="embedded default"
    )
    no_env.mkdir()
    (no_env / "admin.token").write_text("lks_admin\n")
    assert resolve_control_plane(proj).token == "lks_admin"


def test_env_wins(no_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token_file = tmp_path / "tok"
    token_file.write_text("from-file\n")
    monkeypatch.setenv("LAKESHORE_URL", "http://10.0.0.1:9000/")
    monkeypatch.setenv("LAKESHORE_NAMESPACE", "team")
    monkeypatch.setenv("LAKESHORE_TOKEN_FILE", str(token_file))
    cp = resolve_control_plane(tmp_path)
    assert cp == ControlPlane("http://10.0.0.1:9000", "team", "from-file", "env")
    monkeypatch.setenv("LAKESHORE_TOKEN", "from-env")
    assert resolve_control_plane(tmp_path).token == "from-env"


def test_remote_url_never_gets_the_local_admin_token(
    no_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_env.mkdir()
    (no_env / "admin.token").write_text("lks_admin\n")
    monkeypatch.setenv("LAKESHORE_URL", "https://lakeshore.example")
    assert resolve_control_plane(tmp_path).token is None


def test_dreamrc_section_with_provider_tags(no_env: Path, tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    sub = proj / "deep" / "er"
    sub.mkdir(parents=True)
    (proj / "tok").write_text("rc-token\n")
    (proj / ".dreamrc").write_text(
        "providers:\n"
        "  lab: !providers.SSH\n"
        "    host: lab.internal\n"
        "lakeshore:\n"
        "  url: http://127.0.0.1:9999\n"
        "  namespace: lab-team\n"
        "  token_file: tok\n"
    )
    cp = resolve_control_plane(sub)
    assert (cp.url, cp.namespace, cp.token) == ("http://127.0.0.1:9999", "lab-team", "rc-token")
    assert cp.source.startswith(".dreamrc")


def test_dreamrc_with_unknown_tags_still_reads_the_section(no_env: Path, tmp_path: Path) -> None:
    (tmp_path / ".dreamrc").write_text(
        "providers:\n  odd: !providers.Nope {a: 1}\nlakeshore: {url: 'http://127.0.0.1:1234'}\n"
    )
    assert resolve_control_plane(tmp_path).url == "http://127.0.0.1:1234"


def test_fetch_claims_from_a_real_server(server: ServerProc) -> None:
    admin = server.admin
    admin.register("claimed", "i-1")
    admin.register("claimed", "i-2")
    cp = ControlPlane(url=server.url, token=server.admin_token)
    claim = fetch_claims(cp, "claimed")
    assert isinstance(claim, Claim)
    assert claim.live == 2 and claim.gone == 0 and sorted(claim.instances) == ["i-1", "i-2"]
    assert sorted(w.instance_id for w in claim.workers or []) == ["i-1", "i-2"]
    assert all(w.state == "joining" and w.last_seen for w in claim.workers or [])
    assert fetch_claims(cp, "nobody") == Claim(live=0, gone=0, instances=[], workers=[])


def test_fetch_claims_is_none_when_it_cannot_ask(server: ServerProc) -> None:
    assert fetch_claims(ControlPlane(url=server.url, token=None), "x") is None
    assert fetch_claims(ControlPlane(url=server.url, token="lks_wrong"), "x") is None
    assert (
        fetch_claims(ControlPlane(url=server.url, namespace="nope", token=server.admin_token), "x")
        is None
    )
    started = time.monotonic()
    assert fetch_claims(ControlPlane(url=f"http://127.0.0.1:{free_port()}", token="t"), "x") is None
    assert time.monotonic() - started < 1.0


def test_fetch_claims_never_hangs_on_a_silent_server() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(5)  # accepts connections, never answers
    port = sock.getsockname()[1]
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                held.append(sock.accept()[0])

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        started = time.monotonic()
        assert (
            fetch_claims(ControlPlane(url=f"http://127.0.0.1:{port}", token="t"), "x", timeout=0.5)
            is None
        )
        assert time.monotonic() - started < 2.0
    finally:
        stop.set()
        t.join()
        for c in held:
            c.close()
        sock.close()


def test_module_stays_light() -> None:
    import subprocess
    import sys

    code = (
        "import sys, dreamlake.engine.world.lakeshore as m; "
        "heavy = [n for n in ('fastapi', 'sqlalchemy', 'httpx', 'uvicorn', 'alembic') if n in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
    assert lakeshore.EMBEDDED_URL == "http://127.0.0.1:7878"
