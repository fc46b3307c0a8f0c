"""What a launcher raises when the request, not the server, is at fault."""

from __future__ import annotations


class LaunchRejected(Exception):
    """The provider refused the launch, or the kwargs cannot launch: a 4xx, never a 5xx.
    The message is scrubbed of secret values before it reaches the wire."""

    def __init__(self, message: str, status: int = 422, code: str = "launch_rejected") -> None:
        super().__init__(message)
        self.status = status
        self.code = code
