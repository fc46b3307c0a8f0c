"""The daemon's identity on its host: the token minted for it and handed to the host.

``connect`` mints one for every install (:func:`mint`), replacing the one the host
held, and writes it beside the daemon (:func:`hand`). Over ``https`` it is a one-use
bootstrap token the daemon spends on its client certificate (its key made there),
which it renews itself before the certificate ends.

A daemon that was suspended longer than its certificate lives cannot renew it: its
bootstrap token is spent and its certificate ended (or stops being presented before
the daemon could renew it, :func:`..nymph.certwindow.ends_before_start`). ``resume``
reads that on the host (:func:`read_window`) before it starts the daemon again and
hands the host a fresh bootstrap token the same way ``connect`` does
(:func:`fresh_bootstrap`): the same mint, which revokes the token and certificates
the host held, and the same write. A daemon that never held a certificate (plain
HTTP, a proxy that terminates TLS) is left as it is.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..contract import commands
from ..contract.errors import DreamlakeError
from ..remote.base import Shell, check
from .key import NYMPH_HOME, DaemonKey

if TYPE_CHECKING:
    from ..world.lakeshore import ControlPlane

TOKEN_FILE = "token"
CERT_FILES = ("daemon.pem", "daemon.json")
"""The daemon's client certificate (with its key) and what the server said of it."""


def held_token(shell: Shell, dk: DaemonKey) -> str:
    """The token the host's install holds (under the identity key, or the name key
    of an older dreamlake's install of this identity); empty when there is none."""
    script = dk.pick_script() + f'cat "{NYMPH_HOME}/$k/{TOKEN_FILE}" 2>/dev/null'
    return shell.run(script, timeout=30).stdout.strip()


def mint(
    cp: ControlPlane,
    name: str,
    label: str,
    existing: str,
    rerun: str | None = None,
    *,
    key: str | None = None,
    root: Path | None = None,
) -> str:
    """The daemon's token: always a daemon token minted now for this provider and
    host, which replaces (revokes) the one the host had, with the certificates it
    led to: one daemon token per provider host. The host slot carries the daemon's
    ``key`` (its identity) when given: another root's provider of the same name on
    the same host has its own daemon, whose token this must not revoke. Never this
    run's own token (often the admin token): when minting fails, this raises
    before anything on the host changed. ``rerun``: the verb to run again after
    the fix (``connect`` by default)."""
    from ...controlplane.client import ApiFailure, Client
    from ..world import lakeshore, refusal

    slot = f"{label} {key}" if key else label
    failure: Exception
    try:
        client = Client.from_control_plane(cp, timeout=10)
        # over https the host gets a bootstrap token where the server signs
        # certificates: its daemon spends it on a client certificate (its key made
        # there) and authenticates by that; behind a TLS-terminating proxy the
        # server signs none and mints a daemon token instead (the same request)
        scope = "bootstrap" if cp.url.startswith("https://") else "daemon"
        return lakeshore.mint_daemon_token(
            client, cp.namespace, name, slot, replaces=existing, scope=scope
        )
    except ApiFailure as exc:
        why = f"the control plane answered {exc.status} {exc.error}: {exc.detail}"
        if exc.status in (401, 403):
            why += " (minting a daemon token needs an admin token)"
        failure = exc
    except Exception as exc:
        why = f"{type(exc).__name__}: {exc}"
        failure = exc
    # Re-running against the same control plane gets the same answer: the next
    # action is the fix (an admin's step is flagged for a person).
    nxt, fix = refusal.next_for(cp, failure, root or Path.cwd(), rerun or commands.connect(name))
    raise DreamlakeError(
        f"could not mint a token for the {name} daemon at {cp.url} ({why}); nothing was "
        f"installed on the host. A daemon only ever gets a token minted for it: {fix}.",
        kind="token_mint_failed",
        next_action=nxt,
    )


def hand(shell: Shell, install_dir: str, token: str, *, keep_record: bool = False) -> None:
    """Write ``token`` beside the daemon (mode 0600) and remove the client
    certificate from before: a new token replaces the host's identity, and the
    daemon asks for its certificate with it. ``keep_record``: leave ``daemon.json``
    (what the server said of the removed certificate), so that a resume after this
    one, finding the certificate still missing (its daemon did not spend the token),
    hands another; the daemon rewrites it with its new certificate."""
    shell.put_bytes(token.encode(), f"{install_dir}/{TOKEN_FILE}", mode=0o600)
    files = CERT_FILES[:1] if keep_record else CERT_FILES
    gone = " ".join(shlex.quote(f"{install_dir}/{f}") for f in files)
    check(shell, f"rm -f {gone}", what="removing the previous client certificate")


@dataclass(frozen=True)
class CertWindow:
    """The daemon's client certificate as its host holds it, on the host's clock."""

    issued: float
    ends: float
    not_after: str  # as the server wrote it
    now: float  # the host's clock when it was read
    held: bool  # the certificate file is there

    @property
    def ended(self) -> bool:
        return not self.held or self.now >= self.ends

    @property
    def renewable(self) -> bool:
        """A daemon started now renews it itself, with it."""
        from ...controlplane.nymph.certwindow import ends_before_start

        return self.held and not ends_before_start(self.issued, self.ends, self.now)


_WINDOW = """d={d}
echo "now=$(date +%s)"
[ -f "$d/daemon.pem" ] && echo held=yes
echo ---
cat "$d/daemon.json" 2>/dev/null
true
"""


def read_window(shell: Shell, install_dir: str) -> CertWindow | None:
    """The certificate the daemon in ``install_dir`` holds (one command); None when
    it holds none it could renew or lose (no ``daemon.json``: bearer tokens)."""
    out = shell.run(_WINDOW.format(d=shlex.quote(install_dir)), timeout=30).stdout
    head, sep, meta = out.partition("---\n")
    if not sep:
        return None
    kv = dict(line.split("=", 1) for line in head.splitlines() if "=" in line)
    try:
        data = json.loads(meta)
        not_after = str(data["notAfter"])
        ends = datetime.fromisoformat(not_after.replace("Z", "+00:00")).timestamp()
        return CertWindow(
            issued=float(data.get("issuedAt") or ends),
            ends=ends,
            not_after=not_after,
            now=float(kv["now"].strip()),
            held=kv.get("held", "").strip() == "yes",
        )
    except (ValueError, KeyError, TypeError):
        return None


def fresh_bootstrap(
    shell: Shell,
    cp: ControlPlane,
    dk: DaemonKey,
    install_dir: str,
    *,
    label: str,
    rerun: str,
    root: Path | None = None,
) -> str | None:
    """Before a suspended daemon starts again: when its certificate ended (or would
    before the daemon could renew it), mint a fresh bootstrap token for its host
    and hand it there, as ``connect`` does. Returns what was done, or None when the
    daemon renews its certificate itself. Raises the mint's error (nothing on the
    host changed then)."""
    window = read_window(shell, install_dir)
    if window is None or window.renewable:
        return None
    existing = held_token(shell, dk)
    token = mint(cp, dk.name, label, existing, rerun, key=dk.key, root=root)
    hand(shell, install_dir, token, keep_record=True)
    when = "ended" if window.ended else "ends too soon to be renewed"
    return (
        f"✓ the daemon's client certificate {when} ({window.not_after}): its host was handed a "
        "fresh one-use bootstrap token, as connect does (the token and certificate it held "
        "are revoked)"
    )


__all__ = [
    "CERT_FILES",
    "TOKEN_FILE",
    "CertWindow",
    "fresh_bootstrap",
    "hand",
    "held_token",
    "mint",
    "read_window",
]
