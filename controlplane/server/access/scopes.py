"""What each route needs of the token that calls it: the one place that says so.

A token has a *scope* (the ``tokens.scope`` column):

``admin``
    every route, every namespace.
``namespace``
    a person's or a program's token: everything in its own namespace; in an org
    sibling's namespace, reads only.
``daemon``
    a daemon's or an instance's token (minted by ``dreamlake provider connect`` and
    by a launch): the worker routes of its own namespace only, and there only for
    its own provider (and, for an instance's token, its own instance: see
    :func:`worker_allowed`).

Each route declares one :data:`Need` in :data:`ROUTES`, keyed by method and path
template; :class:`~.gate.Gate` checks it for every request before a byte of the
body is read. A route missing from the table gets :func:`default_need` (a read or
a write of the namespace for paths under ``/api/namespaces/{ns}``, else admin):
never a daemon's, never a sibling's write.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Need = Literal["public", "caller", "worker", "read", "write", "admin"]
"""``public``: no token. ``caller``: any valid token (``whoami``). ``worker``: a
daemon token of the namespace, or the namespace's own token, or admin. ``read``:
the namespace's token, an org sibling's, or admin. ``write``: the namespace's own
token, or admin. ``admin``: admin only."""

NEEDS: tuple[Need, ...] = ("public", "caller", "worker", "read", "write", "admin")

NS = "/api/namespaces/{ns}"

ROUTES: dict[tuple[str, str], Need] = {
    # health (answered without a token, and without the shared thread pool)
    ("GET", "/healthz"): "public",
    ("GET", "/readyz"): "public",
    ("GET", "/openapi.json"): "public",
    ("GET", "/docs"): "public",
    ("GET", "/docs/oauth2-redirect"): "public",
    # who am I, namespaces, tokens
    ("GET", "/api/whoami"): "caller",
    ("GET", "/api/namespaces"): "read",
    ("POST", "/api/namespaces"): "admin",
    ("GET", NS): "read",
    ("PATCH", NS): "admin",
    ("POST", NS + "/tokens"): "admin",
    ("DELETE", NS + "/providers/{name}/tokens"): "write",
    ("GET", "/api/tokens"): "admin",
    ("DELETE", "/api/tokens/{token_id}"): "admin",
    ("POST", "/api/tokens/rotate-admin"): "admin",
    # a daemon's own work
    ("POST", NS + "/workers"): "worker",
    ("POST", NS + "/workers/{worker_id}/heartbeat"): "worker",
    ("GET", NS + "/workers/{worker_id}/work"): "worker",
    ("POST", NS + "/workers/{worker_id}/work/{work_id}/result"): "worker",
    ("DELETE", NS + "/workers/{worker_id}"): "worker",
    ("GET", NS + "/daemon/{sha256}"): "worker",
    # who claims what (reads)
    ("GET", NS + "/workers"): "read",
    ("GET", NS + "/providers/{name}/claims"): "read",
    ("POST", NS + "/claims/query"): "read",
    # work
    ("POST", NS + "/providers/{name}/work"): "write",
    ("GET", NS + "/work/{work_id}"): "read",
    # the registry
    ("GET", NS + "/providers"): "read",
    ("POST", NS + "/providers"): "write",
    ("GET", NS + "/providers/{name}"): "read",
    ("PATCH", NS + "/providers/{name}"): "write",
    ("DELETE", NS + "/providers/{name}"): "write",
    ("POST", NS + "/providers/{name}/restore"): "write",
    ("POST", NS + "/providers/{name}/test"): "write",
    ("GET", NS + "/secrets"): "read",
    ("POST", NS + "/secrets"): "write",
    ("PUT", NS + "/secrets/{name}"): "write",
    ("DELETE", NS + "/secrets/{name}"): "write",
    ("GET", NS + "/modes"): "read",
    ("POST", NS + "/modes"): "write",
    ("GET", NS + "/modes/{name}"): "read",
    ("PATCH", NS + "/modes/{name}"): "write",
    ("DELETE", NS + "/modes/{name}"): "write",
    # launching, instances, queues
    ("POST", NS + "/launch/preview"): "write",
    ("POST", NS + "/launch"): "write",
    ("GET", NS + "/instances"): "read",
    ("DELETE", NS + "/instances/{instance_id}"): "write",
    ("GET", NS + "/queues"): "read",
    ("POST", NS + "/queues"): "write",
    ("PATCH", NS + "/queues/{name}"): "write",
    ("DELETE", NS + "/queues/{name}"): "write",
    ("GET", NS + "/queues/{name}/status"): "read",
    # capacity across providers: the listing and a decision change nothing; prices
    # and leases do
    ("GET", NS + "/capacity"): "read",
    ("GET", NS + "/capacity/prices"): "read",
    ("PUT", NS + "/capacity/prices"): "write",
    ("POST", NS + "/capacity/decisions"): "read",
    ("GET", NS + "/capacity/leases"): "read",
    ("POST", NS + "/capacity/leases"): "write",
    ("GET", NS + "/capacity/leases/{lease_id}"): "read",
    ("POST", NS + "/capacity/leases/{lease_id}/renew"): "write",
    ("DELETE", NS + "/capacity/leases/{lease_id}"): "write",
}

_READS = ("GET", "HEAD")


def default_need(method: str, path: str) -> Need:
    """The need of a route :data:`ROUTES` does not name (fail closed)."""
    if path.startswith("/api/namespaces/"):
        return "read" if method in _READS else "write"
    if path.startswith("/api/"):
        return "admin"
    return "public" if method in _READS else "caller"


def _compile(template: str) -> re.Pattern[str]:
    out = ""
    for part in re.split(r"(\{[a-z_0-9]+\})", template):
        if part.startswith("{"):
            out += f"(?P<{part[1:-1]}>[^/]+)"
        else:
            out += re.escape(part)
    return re.compile(out)


_TABLE: list[tuple[str, re.Pattern[str], Need, str]] = sorted(
    ((m, _compile(t), need, t) for (m, t), need in ROUTES.items()),
    key=lambda row: row[3].count("{"),  # literal segments first: /tokens/rotate-admin
)


@dataclass(frozen=True)
class Match:
    need: Need
    template: str | None
    ns: str | None


_NS_PREFIX = re.compile(r"/api/namespaces/([^/]+)(?:/|$)")


def compile_routes(routes: list[tuple[str, str]]) -> list[tuple[str, re.Pattern[str], str]]:
    """``(method, template)`` pairs (the app's routes) made matchable."""
    return [(m, _compile(t), t) for m, t in routes]


def match(
    method: str,
    path: str,
    existing: list[tuple[str, re.Pattern[str], str]] | None = None,
) -> Match:
    """The declared need of ``method path`` and the namespace it names. A route of
    the app (``existing``) that :data:`ROUTES` does not name gets
    :func:`default_need`; a path no route serves needs nothing to be told 404 when
    it is a read, and a token when it carries a body (never read for nobody)."""
    method = "GET" if method == "HEAD" else method
    for m, pattern, need, template in _TABLE:
        if m == method and (found := pattern.fullmatch(path)) is not None:
            return Match(need, template, found.groupdict().get("ns"))
    prefix = _NS_PREFIX.match(path)
    ns = prefix.group(1) if prefix else None
    if existing is not None and not any(p.fullmatch(path) for _m, p, _t in existing):
        return Match("public" if method in _READS else "caller", None, None)
    return Match(default_need(method, path), None, ns)


# -- what a token of each scope may do ------------------------------------------


SCOPES = ("admin", "namespace", "daemon")


def refusal(
    need: Need,
    *,
    scope: str,
    own: bool,
    sibling: bool,
) -> str | None:
    """Why a token of ``scope`` may not do what ``need`` asks (None: it may).

    ``own``: the route's namespace is the token's own; ``sibling``: it is another
    namespace of the token's org. The namespace checks themselves (unknown
    namespace, other org) are :func:`~.deps.access_to`'s."""
    if need == "public" or scope == "admin":
        return None
    if need == "admin":
        return "this needs an admin token"
    if need == "caller":
        return None
    if scope == "daemon":
        if need == "worker" and own:
            return None
        return (
            "a daemon's token may only register, heartbeat, poll and report for its own "
            "provider; use a namespace token for this"
        )
    # a namespace token
    if own:
        return None
    if sibling and need == "read":
        return None
    if sibling:
        return "org siblings are read-only: this namespace's own token is needed to change it"
    return "this token is not valid for this namespace"


def worker_allowed(
    scope: str,
    token_provider: str | None,
    token_instance: str | None,
    provider: str,
    instance: str | None,
) -> bool:
    """Whether a token may act as (or for) the worker of ``provider`` (and
    ``instance``): any token but a daemon's may; a daemon's only for its provider,
    and when its instance is pinned, only that instance."""
    if scope != "daemon":
        return True
    if token_provider is None or token_provider != provider:
        return False
    return not token_instance or instance is None or token_instance == instance
