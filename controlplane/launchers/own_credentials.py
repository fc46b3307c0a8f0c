"""The server's own cloud credentials are the operator's, never a tenant's: a cloud
launch with no credentials secret is refused unless the operator opted in
(``lakeshore serve --launch-server-credentials``). Pure: the refusal and its wording."""

from __future__ import annotations

from .errors import LaunchRejected

OPT_IN = "lakeshore serve --launch-server-credentials (LAKESHORE_LAUNCH_SERVER_CREDENTIALS=1)"


def refused(launcher: str, kwarg: str, secret: str) -> LaunchRejected:
    """The 422 of a ``launcher`` launch with no ``kwarg``: what to give instead
    (``secret``: what the secret holds)."""
    return LaunchRejected(
        f"{kwarg} is required, a secret holding {secret}: this server does not lend its own "
        f"{launcher} credentials; next: store them (lakeshore secrets add NAME ...) and set "
        f'{kwarg}={{"$secret": NAME}} on the provider, or the operator starts the server '
        f"with {OPT_IN}"
    )
