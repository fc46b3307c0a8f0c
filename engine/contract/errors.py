"""Typed errors. The engine raises these; verbs turn them into an ``error`` result.

    DreamlakeError
    ├── UsageError            bad flags or names (kind "usage")
    ├── UnknownVendor         --provider names no vendor (kind "unknown_vendor")
    ├── UnknownProvider       no such provider under the root (kind "unknown_provider")
    ├── VendorMismatch        re-create with another vendor/backend (kind "vendor_mismatch")
    ├── NotWritable           the root or provider dir cannot be written (kind "not_writable")
    ├── BinaryMissing         terraform / pulumi not installed (kind "no_binary")
    ├── BackendError          terraform or pulumi failed (kind "terraform" / "pulumi")
    ├── RemoteError           ssh refused / unreachable (kind "ssh_auth" / "ssh_unreachable")
    └── ControlPlaneError     lakeshore answered with an error (kind "lakeshore")

Each carries an optional ``next_action`` (a contract NextAction) that the result
uses; when absent, the verb picks the recovery (always ``plan``, never ``apply``).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from .result import EditThenContinue, Run, Shell


class DreamlakeError(Exception):
    kind = "error"

    def __init__(
        self,
        message: str,
        *,
        next_action: EditThenContinue | Run | Shell | None = None,
        kind: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.next_action = next_action
        if kind is not None:
            self.kind = kind


class UsageError(DreamlakeError):
    kind = "usage"


class UnknownVendor(DreamlakeError):
    kind = "unknown_vendor"


class UnknownProvider(DreamlakeError):
    kind = "unknown_provider"


class VendorMismatch(DreamlakeError):
    kind = "vendor_mismatch"


class NotWritable(DreamlakeError):
    kind = "not_writable"


class BinaryMissing(DreamlakeError):
    kind = "no_binary"


class BackendError(DreamlakeError):
    """A terraform/pulumi command failed. ``argv``, ``returncode`` and ``stderr_tail``
    say which and how."""

    kind = "backend"

    def __init__(
        self,
        message: str,
        *,
        argv: list[str] | None = None,
        returncode: int | None = None,
        stderr_tail: str = "",
        next_action: EditThenContinue | Run | Shell | None = None,
        kind: str | None = None,
    ) -> None:
        super().__init__(message, next_action=next_action, kind=kind)
        self.argv = list(argv or [])
        self.returncode = returncode
        self.stderr_tail = stderr_tail


class RemoteError(DreamlakeError):
    kind = "ssh"


class ControlPlaneError(DreamlakeError):
    kind = "lakeshore"
