""".dreamrc: tags, modes, the lakeshore section, errors with file and line, and the
first-hit-wins resolution order."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from dreamlake.engine.settings.dreamrc import (
    DreamrcError,
    compose_from_server,
    lakeshore_section,
    load_dreamrc,
    parse_dreamrc,
    read_dreamrc,
    resolve_provider,
)

FULL = """\
providers:
  lab: !providers.SSH
    host: lab.internal
    port: 22
  cluster: !providers.SLURM
    host: login.hpc
    dispatch: daemon
  aws: !providers.EC2
    region: us-east-1
    aws_credentials: {accessKeyId: AKIA, secretAccessKey: inline}
  gce: !providers.GCE {project: p, zone: z}
  kube: !providers.Kube
provider: lab
runner: process
resources: {cpu: 2}
modes:
  gpu:
    provider: aws
    instance_type: g5.xlarge
  inline:
    provider: !providers.Kube
      context: dev
lakeshore:
  url: http://127.0.0.1:9999
  namespace: team
  token_file: tokens/t
"""


@pytest.fixture(autouse=True)
def _no_home_rc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("DREAMRC", raising=False)
    monkeypatch.delenv("LAKESHORE_URL", raising=False)


def test_full_file(tmp_path: Path) -> None:
    rc_path = tmp_path / ".dreamrc"
    rc_path.write_text(FULL)
    rc = read_dreamrc(rc_path)
    assert {n: p.launcher for n, p in rc.providers.items()} == {
        "lab": "SSH",
        "cluster": "SLURM",
        "aws": "EC2",
        "gce": "GCE",
        "kube": "Kube",
        "inline": "Kube",
    }
    assert rc.providers["lab"].kwargs == {"host": "lab.internal", "port": 22}
    assert rc.providers["lab"].dispatch == "direct"
    assert (
        rc.providers["cluster"].dispatch == "daemon"
        and "dispatch" not in rc.providers["cluster"].kwargs
    )
    assert rc.providers["aws"].dispatch == "daemon"
    assert rc.providers["aws"].kwargs["aws_credentials"]["secretAccessKey"] == "inline"
    assert rc.providers["kube"].kwargs == {}
    assert rc.run_config() == {"provider": "lab", "runner": "process", "resources": {"cpu": 2}}
    assert rc.run_config("gpu") == {"provider": "aws", "instance_type": "g5.xlarge"}
    assert rc.run_config("inline") == {"provider": "inline"}
    assert rc.lakeshore == {
        "url": "http://127.0.0.1:9999",
        "namespace": "team",
        "token_file": str(tmp_path / "tokens" / "t"),
    }
    with pytest.raises(Exception, match="no mode 'nope'"):
        rc.run_config("nope")


def test_mode_alias() -> None:
    rc = parse_dreamrc("mode:\n  a: {runner: docker}\n")
    assert rc.run_config("a") == {"runner": "docker"}
    with pytest.raises(DreamrcError, match="aliases"):
        parse_dreamrc("mode: {}\nmodes: {}\n")


@pytest.mark.parametrize(
    ("text", "line", "match"),
    [
        (
            "a: 1\nproviders:\n  x: !providers.Azure\n    k: v\n",
            3,
            "unknown tag '!providers.Azure'",
        ),
        ("providers:\n  x: !providers.ssh {}\n", 2, "unknown tag"),
        ("a: !!python/object:os.system {}\n", 1, "unknown tag"),
        ("a: 1\nb:\n  - c\n  d: [\n", 4, "not valid YAML"),
        ("providers:\n  x: !providers.SSH just-a-string\n", 2, "must tag a mapping"),
        ("providers:\n  x: !providers.SSH {dispatch: sometimes}\n", 2, "dispatch"),
        ("env:\n  x: !providers.SSH {}\n", 2, "only allowed"),
        ("- 1\n", 1, "top level"),
    ],
)
def test_errors_name_file_and_line(tmp_path: Path, text: str, line: int, match: str) -> None:
    p = tmp_path / ".dreamrc"
    p.write_text(text)
    with pytest.raises(DreamrcError, match=match) as exc:
        read_dreamrc(p)
    assert exc.value.line == line
    assert str(exc.value).startswith(f"{p}:{line}: ")


def test_untagged_provider_entry_is_an_error() -> None:
    with pytest.raises(DreamrcError, match="needs a launcher tag"):
        parse_dreamrc("providers:\n  x: {host: h}\n")


def test_resolution_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def rc(where: Path, runner: str) -> Path:
        where.mkdir(parents=True, exist_ok=True)
        (where / ".dreamrc").write_text(f"runner: {runner}\n")
        return where / ".dreamrc"

    home_rc = rc(Path.home(), "home")
    deep = tmp_path / "proj" / "a" / "b"
    deep.mkdir(parents=True)
    assert load_dreamrc(cwd=deep).source == "home"
    rc(tmp_path / "proj", "walked")
    got = load_dreamrc(cwd=deep)
    assert got.source == "cwd" and got.default["runner"] == "walked"
    env_rc = rc(tmp_path / "env", "env")
    monkeypatch.setenv("DREAMRC", str(env_rc))
    assert load_dreamrc(cwd=deep).default["runner"] == "env"
    explicit = rc(tmp_path / "explicit", "explicit")
    assert load_dreamrc(explicit, cwd=deep).source == "--dreamrc"
    with pytest.raises(DreamrcError, match="does not exist"):
        load_dreamrc(tmp_path / "missing", cwd=deep)
    monkeypatch.setenv("DREAMRC", str(tmp_path / "missing"))
    with pytest.raises(DreamrcError, match="DREAMRC"):
        load_dreamrc(cwd=deep)
    monkeypatch.delenv("DREAMRC")
    home_rc.unlink()
    (tmp_path / "proj" / ".dreamrc").unlink()
    assert load_dreamrc(cwd=deep).source == "empty"


def test_cache_of_a_previous_pull(tmp_path: Path) -> None:
    cache = tmp_path / "cache" / "lakeshore" / "dreamrc-default.json"
    cache.parent.mkdir(parents=True)
    cache.write_text(
        json.dumps(
            {
                "providers": [
                    {
                        "name": "aws",
                        "launcher": "EC2",
                        "kwargs": {"region": "r"},
                        "dispatch": "daemon",
                    }
                ],
                "modes": [{"name": "gpu", "provider": "aws", "instance_type": "g5"}],
            }
        )
    )
    rc = load_dreamrc(cwd=tmp_path, pull=True)  # no LAKESHORE_URL: no pull, the cache answers
    assert rc.source == "cache" and rc.providers["aws"].kwargs == {"region": "r"}
    assert rc.run_config("gpu") == {"provider": "aws", "instance_type": "g5"}
    assert resolve_provider("aws", cwd=tmp_path) is not None
    assert resolve_provider("nope", cwd=tmp_path) is None


def test_resolve_provider_without_server(tmp_path: Path) -> None:
    (tmp_path / ".dreamrc").write_text(FULL)
    spec = resolve_provider("lab", cwd=tmp_path)
    assert spec is not None and spec.launcher == "SSH" and spec.kwargs["host"] == "lab.internal"
    assert lakeshore_section(cwd=tmp_path)["namespace"] == "team"


def test_compose_from_server_fills_dispatch() -> None:
    rc = compose_from_server([{"name": "k", "launcher": "Kube", "kwargs": {}}], [])
    assert rc.providers["k"].dispatch == "direct"


def test_fast_path_imports_no_server() -> None:
    code = (
        "import sys; import dreamlake.engine.settings.dreamrc as d; "
        "bad = [m for m in ('httpx', 'fastapi', 'sqlalchemy', 'dreamlake.controlplane') if m in sys.modules]; "
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
