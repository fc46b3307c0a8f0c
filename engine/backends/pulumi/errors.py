"""Map the Automation API's exceptions onto the engine's outcomes, in one place.

    pulumi.automation.errors                     →  here
    ─────────────────────────────────────────────────────────────────────────
    ConcurrentUpdateError (lock held / 409)      →  ApplyOutcome("applying", lock)
    CommandError naming missing / invalid config →  PlanOutcome("needs_input")
                                                    (apply: ApplyOutcome("no_plan"))
    StackNotFoundError, CompilationError,
    RuntimeError, InlineSourceRuntimeError,
    any other CommandError                       →  BackendError(kind="pulumi")
    InvalidVersionError, FileNotFoundError
    (no CLI to run)                              →  BinaryMissing (Shell: install)

The SDK's exception classes decide first; the CLI's text only supplies details
(which config key, which lock). Engine errors raised on purpose (pending creates,
an adopted stack) pass through untouched.

``CommandError`` keeps only the text of the CLI's result (``code``, ``stdout``,
``stderr``); :func:`command_result` reads it back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from ...contract.errors import BackendError, BinaryMissing
from ...contract.result import LockInfo
from .runtime import install_action

_RESULT = re.compile(r"^\s*code: (-?\d+)\n stdout: (.*)\n stderr: (.*)\Z", re.S)
_MISSING = re.compile(r"Missing required configuration variable '([\w.-]+):([\w.-]+)'")
_OURS = re.compile(r"dreamlake config: ([\w.-]+): (.+)")
_LOCK_LINE = re.compile(
    r"^\s*(?P<url>\S+\.json): created by (?P<who>\S+) \(pid (?P<pid>\d+)\) at (?P<since>\S+)", re.M
)


@dataclass(frozen=True)
class CommandOutput:
    code: int | None
    stdout: str
    stderr: str


def command_result(exc: BaseException) -> CommandOutput:
    text = str(exc)
    m = _RESULT.match(text)
    if not m:
        return CommandOutput(None, "", text)
    return CommandOutput(int(m.group(1)), m.group(2), m.group(3))


def tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def config_problems(out: CommandOutput) -> dict[str, str]:
    """Config keys the run complained about → what is wrong."""
    text = out.stdout + "\n" + out.stderr
    found: dict[str, str] = {}
    for m in _MISSING.finditer(text):
        found.setdefault(m.group(2), "not set")
    for m in _OURS.finditer(text):
        found.setdefault(m.group(1), m.group(2).strip())
    return found


def lock_from_message(out: CommandOutput) -> LockInfo:
    """The lock a ConcurrentUpdateError names (DIY: one line per lock file)."""
    m = _LOCK_LINE.search(out.stderr)
    if m:
        return LockInfo(
            state="held",
            path=m.group("url"),
            who=f"{m.group('who')} (pid {m.group('pid')})",
            since=m.group("since"),
            operation="update",
            detail="another pulumi process holds the stack lock; wait for it to end",
        )
    return LockInfo(
        state="held",
        operation="update",
        detail="another update of this stack is in progress (the backend refused a second one); "
        "wait for it to end",
    )


@dataclass(frozen=True)
class Failure:
    """What a failed ``pulumi <op>`` means for the engine.

    ``lock``: another update holds the stack (``lock`` says who, when known);
    ``config``: the stack config is missing or rejected (``problems``: key → what);
    ``other``: ``error`` is the engine exception to raise.
    """

    kind: Literal["lock", "config", "other"]
    lock: LockInfo | None = None
    problems: dict[str, str] = field(default_factory=dict)
    error: BaseException | None = None


def classify(exc: BaseException, *, op: str) -> Failure:
    """The one mapping from the Automation API's exceptions (see the module docstring)."""
    from pulumi.automation import errors as auto_errors

    if isinstance(exc, auto_errors.ConcurrentUpdateError):
        return Failure("lock", lock=lock_from_message(command_result(exc)))
    if isinstance(exc, auto_errors.CommandError):
        problems = config_problems(command_result(exc))
        if problems:
            return Failure("config", problems=problems)
    return Failure("other", error=translate(exc, op=op))


def translate(exc: BaseException, *, op: str) -> BaseException:
    """The engine error for a failure of ``pulumi <op>`` that is not a lock or config
    problem. Returns the exception to raise."""
    from pulumi.automation import errors as auto_errors

    if isinstance(exc, auto_errors.InvalidVersionError):
        return BinaryMissing(
            f"the installed pulumi CLI is too old for this Automation API: {exc}",
            next_action=install_action(),
        )
    if isinstance(exc, FileNotFoundError):
        return BinaryMissing(
            f"the pulumi CLI could not be started: {exc}", next_action=install_action()
        )
    if isinstance(exc, auto_errors.CommandError):
        out = command_result(exc)
        # The SDK's own exception types first; the CLI's text only for the detail.
        what = next(
            (
                text
                for cls, text in (
                    (auto_errors.StackNotFoundError, "the stack does not exist in this backend"),
                    (auto_errors.StackAlreadyExistsError, "the stack already exists"),
                    (auto_errors.CompilationError, "the program does not compile"),
                    (auto_errors.InlineSourceRuntimeError, "the program failed"),
                    (auto_errors.RuntimeError, "the program failed"),
                )
                if isinstance(exc, cls)
            ),
            "the command failed",
        )
        detail = tail(out.stderr) or tail(out.stdout)
        return BackendError(
            f"pulumi {op}: {what}" + (f": {detail.splitlines()[-1]}" if detail else ""),
            argv=["pulumi", op],
            returncode=out.code,
            stderr_tail=detail,
            kind="pulumi",
        )
    if isinstance(exc, RuntimeError) and "summary event" in str(exc):
        return BackendError(
            f"pulumi {op}: the CLI ended without reporting a summary (it may have been "
            "killed); nothing was recorded",
            argv=["pulumi", op],
            kind="pulumi",
        )
    return BackendError(
        f"pulumi {op}: {type(exc).__name__}: {exc}", argv=["pulumi", op], kind="pulumi"
    )
