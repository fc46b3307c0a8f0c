"""When a daemon's client certificate is renewed, and when it is no longer presented:
one decision, read by the daemon (:mod:`.credentials`) and by ``dreamlake provider
resume``, which starts a suspended daemon again and hands its host a fresh bootstrap
token when the certificate would end before the daemon could renew it.

Times are epoch seconds on the daemon's host: ``issued`` when it received the
certificate, ``ends`` the certificate's ``notAfter``.

* renewal is due once :data:`RENEW_AT` of its life has passed;
* it is not presented any more :func:`margin` seconds before it ends (30 s, or a
  sixth of a life shorter than three minutes: a certificate of the shortest life
  the server issues, 60 s, is still renewed before it stops being presented);
* a daemon about to start needs a new bootstrap when the certificate will stop
  being presented within :data:`START_SECONDS` (it would not get to renew it).

Standard library only (the daemon runs on a host's own ``python3``).
"""

from __future__ import annotations

RENEW_AT = 2 / 3  # of the certificate's life
MARGIN_SECONDS = 30.0
START_SECONDS = 20.0
"""How long a daemon started again may take to make its first request."""


def margin(issued: float, ends: float) -> float:
    """Seconds before ``ends`` from which the certificate is not presented."""
    return min(MARGIN_SECONDS, max(0.0, ends - issued) / 6)


def usable_until(issued: float, ends: float) -> float:
    """The moment the certificate stops being presented."""
    return ends - margin(issued, ends)


def renew_from(issued: float, ends: float) -> float:
    """The moment its renewal is due."""
    return issued + RENEW_AT * (ends - issued)


def ends_before_start(issued: float, ends: float, now: float) -> bool:
    """Whether a daemon started ``now`` could no longer renew this certificate (it
    ended, or stops being presented before the daemon's first request)."""
    return now + START_SECONDS >= usable_until(issued, ends)
