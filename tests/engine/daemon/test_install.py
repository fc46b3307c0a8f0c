"""The daemon install: its command line and run script, finding the host's python
(a fake old one included), and a real install through the local shell."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from dreamlake.engine.contract.errors import RemoteError
from dreamlake.engine.daemon import install
from dreamlake.engine.remote import LocalShell


def test_daemon_command_line() -> None:
    cfg = install.DaemonConfig(
        provider="lab",
        server="http://10.0.0.1:7878",
        namespace="default",
        token="t",
        queues=("gpu", "cpu"),
        worker_name="box-1",
        workdir="/srv/nymph",
    )
    argv = install.nymph_argv(cfg, "/h/.dreamlake/nymph/lab/token")
    assert argv == [
        "--server",
        "http://10.0.0.1:7878",
        "--token-file",
        "/h/.dreamlake/nymph/lab/token",
        "--namespace",
        "default",
        "--provider",
        "lab",
        "--queues",
        "gpu,cpu",
        "--instance-id",
        "box-1",
        "--workdir",
        "/srv/nymph",
        "--pid-file",
        "/h/.dreamlake/nymph/lab/nymph.pid",
    ]
    script = install.run_script("/h/d", "/usr/bin/python3", argv)
    assert script.startswith("#!/bin/sh\n")
    assert "exec /usr/bin/python3 -I /h/d/nymph.pyz --server http://10.0.0.1:7878 " in script
    assert install.install_dir("/home/u", "lab") == "/home/u/.dreamlake/nymph/lab"
    conf = json.loads(install.daemon_config_json(cfg, "/tok"))
    assert conf["tokenFile"] == "/tok" and "token" not in conf  # the secret stays in its 0600 file


def _fake_python(folder: Path, name: str, version: str) -> None:
    """A stand-in interpreter (a test double: this machine has no old python to spare)
    that answers the version probe the way ``python3.X`` of ``version`` would."""
    folder.mkdir(exist_ok=True)
    exe = folder / name
    exe.write_text(f'#!/bin/sh\necho "{exe} {version}"\n')
    exe.chmod(0o755)


def test_find_python_prefers_python3_then_the_newest(tmp_path: Path) -> None:
    bin_ = tmp_path / "bin"
    _fake_python(bin_, "python3", "3.10")
    _fake_python(bin_, "python3.12", "3.12")
    sh = LocalShell(env={"PATH": str(bin_)})
    assert install.find_python(sh) == (str(bin_ / "python3"), "3.10")
    _fake_python(bin_, "python3", "3.8")
    assert install.find_python(sh) == (str(bin_ / "python3.12"), "3.12")


def test_find_python_below_3_9_is_an_error_with_a_next_action(tmp_path: Path) -> None:
    bin_ = tmp_path / "bin"
    _fake_python(bin_, "python3", "3.8")
    _fake_python(bin_, "python3.9", "3.7")  # a misnamed one is judged by what it says
    with pytest.raises(RemoteError) as err:
        install.find_python(LocalShell(env={"PATH": str(bin_)}))
    assert err.value.kind == "no_python"
    assert "no python 3.9 or newer" in err.value.message
    assert f"{bin_}/python3 (3.8)" in err.value.message
    assert err.value.next_action is not None
    assert err.value.next_action.command == "sudo apt-get install -y python3"


@pytest.mark.slow
def test_install_on_this_machine_then_refresh(tmp_path: Path) -> None:
    """A real install through the local shell into a temp HOME: the host's python runs
    the zipapp, the token is 0600; the same hash again uploads nothing; a stamp that
    differs is checked again without an upload; what the venv installs left is gone."""
    home = tmp_path / "home"
    legacy = home / ".dreamlake" / "nymph" / "lab"
    (legacy / "venv" / "bin").mkdir(parents=True)
    (legacy / "wheels").mkdir()
    sh = LocalShell(env={"HOME": str(home)})
    cfg = install.DaemonConfig("lab", "http://127.0.0.1:9", "default", "s3cret", ("q",))
    cache = tmp_path / "cache"
    said: list[str] = []
    first = install.install(sh, cfg, progress=said.append, cache=cache)
    d = Path(first.dir)
    assert d == legacy and first.changed
    assert any("uploading the daemon" in s for s in said)
    assert not (d / "venv").exists() and not (d / "wheels").exists()
    assert (d / "token").read_text() == "s3cret"
    assert stat.S_IMODE((d / "token").stat().st_mode) == 0o600
    assert stat.S_IMODE((d / "run.sh").stat().st_mode) == 0o700
    run_sh = (d / "run.sh").read_text()
    assert "--token-file" in run_sh and "s3cret" not in run_sh
    assert f"exec {first.python} -I {d}/nymph.pyz" in run_sh
    (cached,) = cache.glob("nymph-*.pyz")
    assert (d / "nymph.pyz").read_bytes() == cached.read_bytes()
    stamp = json.loads((d / "installed.json").read_text())
    assert cached.name == f"nymph-{stamp['app'][:16]}.pyz"
    ok = sh.run(f"cd / && {first.python} -I {d}/nymph.pyz --help")
    assert ok.ok and "--provider" in ok.stdout, ok.stderr

    inode = (d / "nymph.pyz").stat().st_ino
    said.clear()
    again = install.install(sh, cfg, progress=said.append, cache=cache)
    assert not again.changed and said == []  # same hash: nothing uploaded, nothing checked
    assert (d / "nymph.pyz").stat().st_ino == inode

    stamp["python"] = "/elsewhere/python3"
    (d / "installed.json").write_text(json.dumps(stamp))
    third = install.install(sh, cfg, progress=said.append, cache=cache)
    assert third.changed and (d / "nymph.pyz").stat().st_ino == inode
    assert not any("uploading" in s for s in said)
    assert any("checking the daemon imports" in s for s in said)


def test_a_changed_build_is_uploaded_again(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sh = LocalShell(env={"HOME": str(home)})
    cfg = install.DaemonConfig("lab", "http://127.0.0.1:9", "default", "t")
    install.install(sh, cfg, cache=tmp_path / "cache")
    app = home / ".dreamlake" / "nymph" / "lab" / "nymph.pyz"
    app.write_bytes(app.read_bytes() + b"\n")  # the host's copy no longer matches
    said: list[str] = []
    res = install.install(sh, cfg, progress=said.append, cache=tmp_path / "cache")
    assert res.changed and any("uploading the daemon" in s for s in said)
    assert app.read_bytes() == next((tmp_path / "cache").glob("nymph-*.pyz")).read_bytes()


def test_the_cache_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DREAMLAKE_DAEMON_CACHE", raising=False)
    monkeypatch.setenv("DREAMLAKE_WHEEL_CACHE", str(tmp_path / "old"))
    assert install.cache_dir() == tmp_path / "old"  # the older name still works
    monkeypatch.setenv("DREAMLAKE_DAEMON_CACHE", str(tmp_path / "new"))
    assert install.cache_dir() == tmp_path / "new"


def test_a_python_that_cannot_import_the_daemon_is_an_install_error(tmp_path: Path) -> None:
    """A stand-in python3 (a test double) that passes the version probe but, like a
    python3-minimal without http.client, fails to import the daemon."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    exe = bin_ / "python3"
    exe.write_text(
        "#!/bin/sh\n"
        f'case "$1" in -c) echo "{exe} 3.11" ;; '
        "*) echo \"ModuleNotFoundError: No module named 'http.client'\" >&2; exit 1 ;; esac\n"
    )
    exe.chmod(0o755)
    home = tmp_path / "home"
    sh = LocalShell(env={"HOME": str(home), "PATH": f"{bin_}:/usr/bin:/bin"})
    cfg = install.DaemonConfig("lab", "http://127.0.0.1:9", "default", "t")
    with pytest.raises(install.InstallError) as err:
        install.install(sh, cfg, cache=tmp_path / "cache")
    assert "cannot import it" in err.value.message and "http.client" in err.value.message
    assert err.value.next_action is not None
    assert err.value.next_action.command == "sudo apt-get install -y python3"
    d = home / ".dreamlake" / "nymph" / "lab"
    assert not (d / "installed.json").exists() and not (d / "run.sh").exists()
