"""Install the daemon on a host: one standard-library zipapp (``nymph.pyz``, see
:mod:`.daemon_app`) run by the host's own ``python3`` (3.9 or newer), with its
config and a 0600 token. No venv, no pip, no third-party package on the host.

Layout on the host (``~/.dreamlake/nymph/<key>/``, ``<key>`` the provider's identity
``prv-…``, see :mod:`.daemon_key`: two roots' providers of one name never share it)::

    nymph.pyz       the daemon, uploaded only when its sha256 differs from the local build
    installed.json  what was installed: the zipapp's sha256 and the python that runs it
    nymph.json      the daemon's config (control plane, namespace, provider, queues)
    token           the control-plane token, mode 0600 (over https a bootstrap token,
                    spent by the daemon on its client certificate)
    ca.crt          the CA certificate an https control plane is verified with, when
                    connect used one (public)
    daemon.pem      the daemon's client certificate and key, made by the daemon (0600)
    run.sh          execs the daemon in the foreground; what a supervisor starts
    nymph.log       the daemon's output under tmux

The zipapp is built locally once per source change into a cache named by its
content hash (``DREAMLAKE_DAEMON_CACHE``; the older ``DREAMLAKE_WHEEL_CACHE`` is
still read; default ``~/.cache/dreamlake/daemon``).
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..contract import events
from ..contract.errors import DreamlakeError, RemoteError
from ..remote.base import Shell, check, home
from . import build as daemon_app
from . import identity

DAEMON_MODULE = daemon_app.DAEMON_PACKAGE
"""The daemon's package: it and every module in it are what the host must import."""
MIN_PYTHON = daemon_app.MIN_PYTHON
APP_NAME = daemon_app.APP_NAME
LEGACY = ("venv", "wheels")  # what installs before the zipapp left in the install dir

Progress = Callable[[str], None]


class InstallError(DreamlakeError):
    kind = "install"


def cache_dir() -> Path:
    """Where the built zipapps are kept: ``DREAMLAKE_DAEMON_CACHE``, else the older
    ``DREAMLAKE_WHEEL_CACHE``, else the user cache folder's ``dreamlake/daemon``."""
    env = os.environ.get("DREAMLAKE_DAEMON_CACHE") or os.environ.get("DREAMLAKE_WHEEL_CACHE")
    if env:
        return Path(env)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("dreamlake")) / "daemon"


# -- installing on a host -----------------------------------------------------------


@dataclass(frozen=True)
class DaemonConfig:
    """What the daemon needs to claim ``provider``."""

    provider: str
    server: str
    namespace: str
    token: str | None
    queues: tuple[str, ...] = ()
    worker_name: str | None = None
    workdir: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    identity: str | None = None  # provider.json's identity, sent when registering
    key: str | None = None  # names the install folder (daemon_key); the provider's name if unset
    ca_pem: bytes | None = None  # the CA certificate of an https control plane


@dataclass(frozen=True)
class Installed:
    """Where the daemon landed; ``python`` is the host interpreter that runs it."""

    dir: str
    python: str
    run_script: str
    log: str
    config: str
    token_file: str
    changed: bool
    notes: tuple[str, ...] = ()


def install_dir(home_dir: str, key: str) -> str:
    """The daemon's folder on a host: ``~/.dreamlake/nymph/<key>``."""
    return f"{home_dir}/.dreamlake/nymph/{key}"


_PYTHON_NAMES = (
    "python3",
    "python3.14",
    "python3.13",
    "python3.12",
    "python3.11",
    "python3.10",
    "python3.9",
)

# Prints "<path> <major.minor>" per candidate and stops at the first new enough one
# (a probe costs an interpreter start; pyenv shims cost more).
_FIND_PYTHON = (
    f"for p in {' '.join(_PYTHON_NAMES)}; do\n"
    '  x=$(command -v "$p" 2>/dev/null) || continue\n'
    """  v=$("$x" -c 'import sys; print(sys.executable, "%d.%d" % sys.version_info[:2])' """
    "2>/dev/null) || continue\n"
    '  echo "$v"\n'
    f'  case "${{v##* }}" in 2.*|3.[0-{MIN_PYTHON[1] - 1}]) ;; *) break ;; esac\n'
    "done\n"
    "true\n"
)


def _version(v: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in v.split("."))
    except ValueError:
        return (0,)


def find_python(shell: Shell) -> tuple[str, str]:
    """The host python that runs the daemon, and its ``major.minor``: ``python3`` on
    the login PATH when it is 3.9 or newer, else the newest ``python3.X`` (X ≥ 9) on
    PATH. None of them new enough is an error whose next action installs python3."""
    seen: dict[str, str] = {}
    for line in shell.run(_FIND_PYTHON, timeout=30).stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] not in seen:
            seen[parts[0]] = parts[1]
    ok = [(p, v) for p, v in seen.items() if _version(v) >= MIN_PYTHON]
    if not ok:
        from ..contract.result import Shell as ShellAction

        want = f"{MIN_PYTHON[0]}.{MIN_PYTHON[1]}"
        found = ", ".join(f"{p} ({v})" for p, v in seen.items()) or "none on PATH"
        raise RemoteError(
            f"{shell.label} has no python {want} or newer to run the daemon (found: {found}). "
            f"The daemon is a zipapp run by the host's own python3: install python3 {want} or "
            f"newer there (as python3, or python3.{MIN_PYTHON[1]} … python3.13 on PATH), "
            "then re-run connect.",
            kind="no_python",
            next_action=ShellAction(
                command="sudo apt-get install -y python3",
                host=None if shell.is_local else shell.label,
            ),
        )
    return ok[0]  # python3 itself when it is new enough: the order of _PYTHON_NAMES


def nymph_argv(cfg: DaemonConfig, token_file: str) -> list[str]:
    """The daemon's flags (see ``nymph --help``)."""
    argv = [
        "--server",
        cfg.server,
        "--token-file",
        token_file,
        "--namespace",
        cfg.namespace,
        "--provider",
        cfg.provider,
    ]
    if cfg.queues:
        argv += ["--queues", ",".join(cfg.queues)]
    if cfg.worker_name:
        argv += ["--instance-id", cfg.worker_name]
    if cfg.workdir:
        argv += ["--workdir", cfg.workdir]
    # The pid of the running daemon, so a suspend can signal exactly it.
    argv += ["--pid-file", token_file.rsplit("/", 1)[0] + "/nymph.pid"]
    if cfg.identity:
        argv += ["--identity", cfg.identity]
    if cfg.ca_pem:
        argv += ["--ca", token_file.rsplit("/", 1)[0] + "/ca.crt"]
    return argv


def run_script(d: str, python: str, argv: list[str], app: str | None = None) -> str:
    """``run.sh``: execs the daemon (the zipapp ``app``, by default ``d/nymph.pyz``)
    with the host's ``python`` in the foreground; what a supervisor starts. ``-I``:
    the host's PYTHONPATH and user site-packages play no part."""
    args = " ".join(shlex.quote(a) for a in argv)
    app = app or f"{d}/{APP_NAME}"
    return (
        "#!/bin/sh\n"
        "# Runs the nymph daemon (a zipapp) in the foreground; a supervisor (systemd or tmux)"
        " starts this.\n"
        f"cd {shlex.quote(d)} || exit 1\n"
        f"exec {shlex.quote(python)} -I {shlex.quote(app)} {args}\n"
    )


def daemon_config_json(cfg: DaemonConfig, token_file: str) -> str:
    data: dict[str, Any] = {
        "server": cfg.server,
        "namespace": cfg.namespace,
        "provider": cfg.provider,
        "tokenFile": token_file,
        "queues": list(cfg.queues),
    }
    if cfg.worker_name:
        data["workerName"] = cfg.worker_name
    if cfg.workdir:
        data["workdir"] = cfg.workdir
    if cfg.identity:
        data["identity"] = cfg.identity
    data.update(cfg.extra)
    return json.dumps(data, indent=2) + "\n"


def install(
    shell: Shell,
    cfg: DaemonConfig,
    *,
    progress: Progress | None = None,
    cache: Path | None = None,
    module: str = DAEMON_MODULE,
) -> Installed:
    """Install (or refresh) the daemon for ``cfg.provider`` on ``shell``'s host.

    The zipapp is uploaded only when the host's copy has another sha256; the
    host's python imports every module in it once after a change (a failure is an
    :class:`InstallError`). ``module`` is the daemon package the zipapp holds."""
    say = progress or (lambda _m: None)
    modules = daemon_app.module_closure(module)
    built = daemon_app.cached(cache or cache_dir(), modules)
    local_app, digest = built.path, built.sha256
    if built.fresh:
        events.step("build", f"built the daemon's zipapp {local_app}")

    d = install_dir(home(shell), cfg.key or cfg.provider)
    qd = shlex.quote(d)
    app = f"{d}/{APP_NAME}"
    probe = check(
        shell,
        f"umask 077; mkdir -p {qd} && cd {qd} && "
        f"{{ sha256sum -- {APP_NAME} 2>/dev/null || shasum -a 256 {APP_NAME} 2>/dev/null; "
        "echo; cat installed.json 2>/dev/null; }; true",
        what=f"creating {d}",
    ).stdout
    first, _, rest = probe.partition("\n")
    remote_sum = first.split()[0] if first.strip() else ""
    try:
        had = json.loads(rest)
    except ValueError:
        had = None

    python, pyver = find_python(shell)
    if remote_sum != digest:
        events.step("upload", f"uploading the daemon ({APP_NAME}) to {shell.label}:{d}")
        say(
            f"uploading the daemon ({APP_NAME}, {local_app.stat().st_size // 1024} KiB) to {shell.label}:{d}"
        )
        shell.put_file(str(local_app), app, mode=0o644)

    stamp = {"app": digest, "python": python}
    changed = remote_sum != digest or had != stamp
    if changed:
        events.step("install", f"checking the daemon imports with python {pyver} ({python})")
        say(f"checking the daemon imports with python {pyver} ({python})")
        names = " ".join(shlex.quote(m.name) for m in modules)
        tmp = f"{d}/.installed.json.tmp"
        smoke = shell.run(
            f"cd / && {shlex.quote(python)} -I -c {shlex.quote(_SMOKE)} {shlex.quote(app)} {names}"
            f" && printf '%s' {shlex.quote(json.dumps(stamp, sort_keys=True))} > {shlex.quote(tmp)}"
            f" && mv -f {shlex.quote(tmp)} {shlex.quote(d + '/installed.json')}"
            f" && rm -rf {' '.join(shlex.quote(f'{d}/{x}') for x in LEGACY)}",
            timeout=120,
        )
        if not smoke.ok:
            from ..contract.result import Shell as ShellAction

            # e.g. a python3-minimal without the standard library's http or json
            raise InstallError(
                f"the daemon was uploaded to {app} on {shell.label} but python {pyver} "
                f"({python}) cannot import it: {smoke.tail(4)}. Install the full python3 "
                "(its standard library) there, then re-run connect.",
                next_action=ShellAction(
                    command="sudo apt-get install -y python3",
                    host=None if shell.is_local else shell.label,
                ),
            )

    token_file = f"{d}/token"
    config = f"{d}/nymph.json"
    # a new token replaces the host's identity: a certificate from before is revoked
    identity.hand(shell, d, cfg.token or "")
    if cfg.ca_pem:
        shell.put_bytes(cfg.ca_pem, f"{d}/ca.crt", mode=0o644)
    shell.put_bytes(daemon_config_json(cfg, token_file).encode(), config, mode=0o600)
    if cfg.workdir:
        check(shell, f"mkdir -p {shlex.quote(cfg.workdir)}", what=f"creating {cfg.workdir}")
    run = f"{d}/run.sh"
    shell.put_bytes(
        run_script(d, python, nymph_argv(cfg, token_file), app).encode(), run, mode=0o700
    )
    return Installed(
        dir=d,
        python=python,
        run_script=run,
        log=f"{d}/nymph.log",
        config=config,
        token_file=token_file,
        changed=changed,
    )


# Imports every module of the zipapp from the zipapp (argv[1]) only: a module the
# archive lacks, or one the host's python cannot run, fails here, not in the daemon.
_SMOKE = r"""
import importlib, sys
sys.path.insert(0, sys.argv[1])
for name in sys.argv[2:]:
    mod = importlib.import_module(name)
    if not (getattr(mod, "__file__", "") or "").startswith(sys.argv[1]):
        raise SystemExit("%s comes from %s, not the zipapp" % (name, mod.__file__))
"""
