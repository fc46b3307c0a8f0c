"""What ``terraform init`` read when it last succeeded here, so ``plan`` runs it
again only when that changed.

The record, ``terraform/tfplan.init.json`` beside the plan record (git-ignored with
it: it names this machine's binary), holds one hash over exactly what init reads
and writes:

* the terraform binary (its path, size and modification time) and its version;
* where providers come from: the CLI config file in force (its text), the plugin
  cache directory, ``TF_DATA_DIR`` and ``TF_CLI_ARGS`` / ``TF_CLI_ARGS_init``;
* of every ``*.tf`` file of the configuration and of the local modules it calls:
  the text of its ``terraform {}`` (required providers, backend, cloud),
  ``provider`` and ``module`` blocks, the providers its resources and data
  sources imply (the type's prefix) and the ``provider =`` references; a
  ``*.tf.json`` file whole;
* the dependency lock file ``.terraform.lock.hcl``;
* what init left in ``.terraform/``: the backend it configured, the modules it
  installed and the provider packages (their names, sizes, times and link targets).

A user's ``terraform init -upgrade`` that changes the lock file or the installed
packages, an edited ``versions.tf`` or provider block, another terraform binary or
another plugin mirror all change the hash, and the next ``plan`` runs ``init``.
The binary's version is kept so that checking ``required_version`` needs no
``terraform version`` run while the binary is the same file.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from ...settings import records
from ...settings.digest import sha256
from ...settings.fsutil import atomic_write
from .hcltext import block_body
from .planinputs import LOCK_HCL

INIT_FILE = "tfplan.init.json"
INIT_FORMAT = 1
DATA_DIR = ".terraform"
OWN_FILES = frozenset({"dreamlake.tfrc"})  # ours, rewritten on every run (cliconfig)
ENV_KEYS = ("TF_PLUGIN_CACHE_DIR", "TF_DATA_DIR", "TF_CLI_ARGS", "TF_CLI_ARGS_init")

# Compiled by ``re`` on first use (its cache keeps them): an apply the console script
# started ahead does not ask whether init must run, and imports this module only
# with the backend.
_INIT_BLOCK = r'(?m)^[ \t]*(?:terraform|provider[ \t]+"[^"\n]*"|module[ \t]+"[^"\n]*")[ \t]*\{'
_RESOURCE = r'(?m)^[ \t]*(?:resource|data|ephemeral)[ \t]+"([\w-]+)"'
_PROVIDER_REF = r"(?m)^[ \t]*provider[ \t]*=[ \t]*([\w-]+)"
_MODULE_SOURCE = r'(?m)^[ \t]*source[ \t]*=[ \t]*"(\.{1,2}/[^"]*)"'
_MAX_MODULES = 64


@records.record(eq=False)  # never compared (statefile.StateFile)
class InitCheck:
    """Whether ``init`` must run, and the binary's version when the record knows it."""

    needed: bool
    fingerprint: str
    version: str | None


def binary_identity(binary: str) -> dict[str, object]:
    try:
        st = os.stat(binary)
    except OSError:
        return {"path": binary}
    return {"path": os.path.realpath(binary), "size": st.st_size, "mtime": st.st_mtime_ns}


def _read(path: Path) -> bytes | None:
    from ...settings.readers import read_bytes

    try:
        return read_bytes(path)
    except (OSError, ValueError):
        return None


def _config_files(tf_dir: Path) -> Iterator[Path]:
    """The ``*.tf`` / ``*.tf.json`` files of the root module and of every local module
    it calls (``source = "./…"`` or ``"../…"``), each folder once."""
    todo: list[Path] = [tf_dir]
    seen: set[str] = set()
    while todo and len(seen) < _MAX_MODULES:
        folder = todo.pop(0)
        key = os.path.realpath(folder)
        if key in seen or not folder.is_dir():
            continue
        seen.add(key)
        for path in sorted(folder.iterdir()):
            if not path.name.endswith((".tf", ".tf.json")) or not path.is_file():
                continue
            yield path
            if path.name.endswith(".tf"):
                text = (_read(path) or b"").decode("utf-8", "replace")
                todo += [folder / m.group(1) for m in re.finditer(_MODULE_SOURCE, text)]


def init_inputs(text: str) -> list[str]:
    """What init reads of one ``*.tf`` file's text: its ``terraform``, ``provider``
    and ``module`` blocks, and the providers its resources name."""
    out = [m.group(0) + block_body(text, m.end()) for m in re.finditer(_INIT_BLOCK, text)]
    implied = {m.group(1).split("_", 1)[0] for m in re.finditer(_RESOURCE, text)}
    implied |= {m.group(1) for m in re.finditer(_PROVIDER_REF, text)}
    return out + sorted(implied)


def _data_dir_listing(data: Path) -> list[str]:
    """Names, sizes, times and link targets of what init wrote in ``.terraform/``
    (provider packages are not read: a link or a folder per version)."""
    out: list[str] = []
    for root, dirs, files in os.walk(data):
        dirs.sort()
        rel_root = Path(root).relative_to(data)
        if rel_root.parts[:1] == ("modules",):
            dirs[:] = []  # modules.json says what was installed
        for name in sorted(dirs + files):
            if rel_root == Path(".") and name in OWN_FILES:
                continue
            p = Path(root) / name
            try:
                st = p.lstat()
            except OSError:
                continue
            target = os.readlink(p) if p.is_symlink() else ""
            out.append(f"{(rel_root / name).as_posix()} {st.st_size} {st.st_mtime_ns} {target}")
    return out


def fingerprint(tf_dir: Path, binary: str, env: Mapping[str, str]) -> str:
    h = sha256()

    def add(label: str, data: bytes | str | None) -> None:
        raw = data.encode("utf-8", "replace") if isinstance(data, str) else (data or b"")
        h.update(f"{label}\0{len(raw)}\0".encode())
        h.update(raw)

    add("binary", json.dumps(binary_identity(binary), sort_keys=True))
    cli_config = env.get("TF_CLI_CONFIG_FILE") or str(Path.home() / ".terraformrc")
    add("cli-config", cli_config)
    add("cli-config-text", _read(Path(cli_config)) if cli_config != os.devnull else b"")
    for key in ENV_KEYS:
        add(key, env.get(key, ""))
    for path in _config_files(tf_dir):
        name = os.path.relpath(path, tf_dir)
        raw = _read(path)
        if path.name.endswith(".tf.json") or raw is None:
            add(name, raw)
            continue
        inputs = init_inputs(raw.decode("utf-8", "replace"))
        if inputs:  # a file of variables and outputs only is none of init's business
            add(name, "\n".join(inputs))
    add(LOCK_HCL, _read(tf_dir / LOCK_HCL))
    add(DATA_DIR, "\n".join(_data_dir_listing(tf_dir / DATA_DIR)))
    return h.hexdigest()


def _record(tf_dir: Path) -> dict[str, object] | None:
    from ...settings.readers import loads_json

    raw = _read(tf_dir / INIT_FILE)
    try:
        data = loads_json(raw.decode("utf-8")) if raw is not None else None
    except (ValueError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) and data.get("format") == INIT_FORMAT else None


def check(tf_dir: Path, binary: str, env: Mapping[str, str]) -> InitCheck:
    """Is the working directory initialised for today's configuration?"""
    now = fingerprint(tf_dir, binary, env)
    rec = _record(tf_dir)
    if rec is None or rec.get("fingerprint") != now:
        return InitCheck(True, now, None)
    version = rec.get("terraformVersion")
    return InitCheck(False, now, version if isinstance(version, str) else None)


def known_version(tf_dir: Path, binary: str) -> str | None:
    """The version the record holds for ``binary``, when it is still the same file."""
    rec = _record(tf_dir)
    if rec is None or rec.get("binary") != binary_identity(binary):
        return None
    version = rec.get("terraformVersion")
    return version if isinstance(version, str) else None


def record(tf_dir: Path, binary: str, env: Mapping[str, str], version: str | None) -> InitCheck:
    """After a successful ``init``: what it read, for the next ``plan`` to compare."""
    now = fingerprint(tf_dir, binary, env)
    data = {
        "format": INIT_FORMAT,
        "fingerprint": now,
        "binary": binary_identity(binary),
        "terraformVersion": version,
    }
    atomic_write(tf_dir / INIT_FILE, json.dumps(data, indent=2) + "\n")
    return InitCheck(False, now, version)


def forget(tf_dir: Path) -> None:
    """Drop the record: the next ``plan`` runs ``init``."""
    (tf_dir / INIT_FILE).unlink(missing_ok=True)


__all__ = ["INIT_FILE", "InitCheck", "check", "fingerprint", "forget", "known_version", "record"]
