"""Where a provider's Pulumi state lives, the environment every Pulumi command gets,
and the exact command lines the engine hands to a person for recovery.

Backend URL, first hit wins:

1. provider.json ``settings.pulumi.backendUrl`` (this provider, explicitly);
2. ``PULUMI_BACKEND_URL`` in the environment;
3. ``file://<provider dir>/pulumi/.state`` (the default; git-ignored).

Secrets passphrase: ``PULUMI_CONFIG_PASSPHRASE`` or ``PULUMI_CONFIG_PASSPHRASE_FILE``
from the environment, else a generated passphrase in ``pulumi/.passphrase`` (mode
0600) passed as ``PULUMI_CONFIG_PASSPHRASE_FILE``. Nothing ever prompts.
"""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
from collections.abc import Mapping
from pathlib import Path

from ...contract.errors import BinaryMissing, DreamlakeError
from ...contract.result import Shell
from ...settings.fsutil import atomic_write
from ...world.record import read_record
from .project import PulumiProject


def install_command() -> str:
    """Install the pulumi CLI the way the SDK itself does: ``PulumiCommand.install()``
    puts the version matching the installed SDK under ``~/.pulumi/versions/<v>``
    (where :func:`find_cli` looks). Installing software is a person's call: the next
    action carrying it is flagged ``approval``."""
    import sys

    code = "from pulumi.automation import PulumiCommand; PulumiCommand.install()"
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"


INSTALL = "curl -fsSL https://get.pulumi.com | sh"  # the vendor's own installer, in prose
SDK_INSTALL = "pip install 'dreamlake[pulumi]'"
"""The Pulumi SDK (the Automation API) is the ``pulumi`` extra, not the base install."""


def has_sdk() -> bool:
    """Whether the Pulumi SDK can be imported here (found, not imported)."""
    import importlib.util

    try:
        return importlib.util.find_spec("pulumi") is not None
    except (ImportError, ValueError):
        return False


def require_sdk() -> None:
    """``BinaryMissing`` whose next action installs the ``pulumi`` extra, unless the
    SDK is installed. Checked before the CLI: the CLI's own installer is the SDK's."""
    if not has_sdk():
        raise BinaryMissing(
            "the pulumi backend drives Pulumi through its Python SDK (the Automation API), "
            f"which is not installed here: it is the `pulumi` extra ({SDK_INSTALL}). "
            "Installing software needs a person's yes.",
            next_action=Shell(command=SDK_INSTALL, approval=True),
        )


def install_action() -> Shell:
    return Shell(command=install_command(), approval=True)


def sdk_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pulumi")
    except PackageNotFoundError:
        return None


def backend_url(project: PulumiProject, environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    try:
        record = read_record(project.provider_dir / "provider.json")
    except DreamlakeError:
        record = None
    if record is not None:
        pul = record.settings.get("pulumi")
        url = pul.get("backendUrl") if isinstance(pul, dict) else None
        if isinstance(url, str) and url:
            return url
    url = env.get("PULUMI_BACKEND_URL")
    if url:
        return url
    return "file://" + str(project.default_state_dir.absolute())


def local_root(url: str, project: PulumiProject) -> Path | None:
    """The directory of a ``file://`` backend URL (None for s3/gs/azblob/cloud)."""
    if not url.startswith("file://"):
        return None
    path = url[len("file://") :].split("?", 1)[0]
    p = Path(path).expanduser()
    return p if p.is_absolute() else (project.dir / p).absolute()


def passphrase_env(
    project: PulumiProject, environ: Mapping[str, str] | None = None, *, create: bool = True
) -> dict[str, str]:
    """The passphrase variable to pass: none when the environment already has one."""
    env = os.environ if environ is None else environ
    if env.get("PULUMI_CONFIG_PASSPHRASE") is not None or env.get("PULUMI_CONFIG_PASSPHRASE_FILE"):
        return {}
    path = project.passphrase.absolute()
    if create and not path.exists():
        atomic_write(path, secrets.token_urlsafe(32) + "\n", mode=0o600, overwrite=False)
    return {"PULUMI_CONFIG_PASSPHRASE_FILE": str(path)}


def command_env(
    project: PulumiProject, environ: Mapping[str, str] | None = None, *, create: bool = True
) -> dict[str, str]:
    """The variables every Pulumi command for this provider runs with (added to the
    inherited environment). ``create``: make the state dir and passphrase file."""
    url = backend_url(project, environ)
    root = local_root(url, project)
    if create and root is not None:
        root.mkdir(parents=True, exist_ok=True)
    env = {
        "PULUMI_BACKEND_URL": url,
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_SKIP_CONFIRMATIONS": "true",
    }
    env.update(passphrase_env(project, environ, create=create))
    return env


def find_cli(environ: Mapping[str, str] | None = None) -> Path | None:
    """The pulumi binary: on PATH, else where the installers put it — the SDK's
    ``PulumiCommand.install()`` under ``~/.pulumi/versions/<the SDK's version>`` (any
    other version there next, newest first), then the shell installer's ``~/.pulumi/bin``."""
    env = os.environ if environ is None else environ
    found = shutil.which("pulumi", path=env.get("PATH"))
    if found:
        return Path(found)
    home = Path(env.get("PULUMI_HOME") or Path(env.get("HOME") or Path.home()) / ".pulumi")
    versions = home / "versions"
    wanted = sdk_version()
    candidates = [versions / wanted / "bin" / "pulumi"] if wanted else []
    try:
        others = sorted(versions.iterdir(), key=lambda p: _version_key(p.name), reverse=True)
    except OSError:
        others = []
    candidates += [v / "bin" / "pulumi" for v in others if v.name != wanted]
    candidates.append(home / "bin" / "pulumi")
    return next((c for c in candidates if c.is_file() and os.access(c, os.X_OK)), None)


def _version_key(name: str) -> tuple[int, ...]:
    out = []
    for part in name.lstrip("v").split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        out.append(int(digits) if digits else 0)
    return tuple(out)


def require_cli(environ: Mapping[str, str] | None = None) -> Path:
    require_sdk()
    cli = find_cli(environ)
    if cli is None:
        raise BinaryMissing(
            "the pulumi CLI is not installed (not on PATH, not in ~/.pulumi/versions or "
            "~/.pulumi/bin); the pulumi backend drives it through the Automation API. Install "
            "it — the SDK's own installer puts the matching version in ~/.pulumi/versions "
            f"(or: {INSTALL}) — then re-run. Installing software needs a person's yes.",
            next_action=install_action(),
        )
    return cli


def cli_command(project: PulumiProject, args: str, environ: Mapping[str, str] | None = None) -> str:
    """A pulumi command line a person can paste: right directory, backend and stack."""
    env = command_env(project, environ, create=False)
    parts = [f"cd {shlex.quote(str(project.dir.absolute()))} &&"]
    parts.append(f"PULUMI_BACKEND_URL={shlex.quote(env['PULUMI_BACKEND_URL'])}")
    if "PULUMI_CONFIG_PASSPHRASE_FILE" in env:
        parts.append(
            f"PULUMI_CONFIG_PASSPHRASE_FILE={shlex.quote(env['PULUMI_CONFIG_PASSPHRASE_FILE'])}"
        )
    parts.append(f"pulumi {args} --stack {shlex.quote(project.stack)}")
    if not project.adopted:
        parts.append(f"--config-file {shlex.quote(project.stack_file.name)}")
    parts.append("--non-interactive")
    return " ".join(parts)
