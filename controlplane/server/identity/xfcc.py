"""Envoy's ``x-forwarded-client-cert`` (XFCC) header: the client certificate it
carries, for :mod:`.forwarded`.

The value is a list of elements separated by ``,``, one per proxy the request
passed, each a ``;``-separated list of ``Key=Value`` pairs (keys ``By``, ``Hash``,
``Cert``, ``Chain``, ``Subject``, ``URI``, ``DNS``, in any case); a value holding
``,``, ``;`` or ``=`` is double-quoted, a ``"`` inside it written ``\\"``. ``Cert``
is the client's certificate, URL-escaped PEM.

Only the **last** element is read: the one the nearest proxy (lakeshore's TCP
peer, the trusted one) added for the client it spoke TLS with. Envoy with
``forward_client_cert_details: SANITIZE_SET`` sends that element alone; with
``APPEND_FORWARD`` the elements before it are whatever reached that proxy, the
client's own header included, and are never believed. An element without
``Cert`` is refused: ``By`` and ``Hash`` name a certificate, they are not one, and
the server verifies the certificate itself (``set_current_client_cert_details:
{ cert: true }``).
"""

from __future__ import annotations

import re

__all__ = ["XfccError", "is_xfcc", "nearest_cert"]

_START = re.compile(rb"^\s*[A-Za-z]+=")


class XfccError(ValueError):
    """The header cannot give a certificate (the sentence says why)."""


def is_xfcc(raw: bytes) -> bool:
    """Whether a header's value is in XFCC's form (``Key=...``) rather than a
    URL-escaped PEM (``-----BEGIN...``, nginx's and ALB's)."""
    return _START.match(raw) is not None


def _split(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside double quotes (a ``\\"`` stays inside)."""
    parts: list[str] = []
    current: list[str] = []
    quoted = escaped = False
    for char in text:
        if escaped:
            escaped = False
        elif char == "\\" and quoted:
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char == sep and not quoted:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    if quoted:
        raise XfccError("a double-quoted value is not closed")
    parts.append("".join(current))
    return parts


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1].replace('\\"', '"')
    return value


def _pairs(element: str) -> list[tuple[str, str]]:
    """One element's ``(key in lower case, value)`` pairs, in order."""
    out = []
    for pair in _split(element, ";"):
        if not pair.strip():
            continue
        key, eq, value = pair.partition("=")
        if not eq or not key.strip():
            raise XfccError(f"{pair.strip()[:40]!r} is not Key=Value")
        out.append((key.strip().lower(), _unquote(value)))
    return out


def nearest_cert(raw: bytes) -> bytes:
    """The ``Cert`` of the header's last element (URL-escaped PEM, as it came).
    Raises :class:`XfccError` when it cannot be read or has none."""
    try:
        text = raw.decode("latin-1")
        element = _split(text, ",")[-1]
        found = _pairs(element)
    except XfccError as exc:
        raise XfccError(f"it cannot be read as XFCC ({exc})") from None
    certs = [value for key, value in found if key == "cert"]
    if len(certs) > 1:
        raise XfccError("its nearest element gives Cert more than once")
    if not certs or not certs[0].strip():
        keys = ", ".join(sorted({key for key, _ in found})) or "nothing"
        raise XfccError(
            f"its nearest element carries no Cert ({keys}): By and Hash name a "
            "certificate, they are not one; have the proxy send it (Envoy: "
            "set_current_client_cert_details: { cert: true })"
        )
    return certs[0].strip().encode("latin-1")
