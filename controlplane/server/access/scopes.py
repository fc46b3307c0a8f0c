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
``metrics``
    a monitoring system's token: ``GET /metrics``, the dashboard (``/ui``) and
    ``whoami``, nothing else.
``bootstrap``
    what ``connect`` or a launch hands a host: one use, minutes to live, good only
    to ask for the daemon's certificate for its provider (``enroll``) and, until
    then, to fetch the daemon bundle (``bundle``). The
    certificate then authenticates the daemon as a ``daemon`` token does (see
    ``server/identity/``).

Each route declares one :data:`Need` in :data:`ROUTES`, keyed by method and path
template; :class:`~.gate.Gate` checks it for every request before a byte of the
body is read. The gate matches a request against the app's own routes, compiled the
way the router compiles them (a ``{instance_id:path}`` parameter spans ``/``), in the
router's order, so the rule it applies is the rule of the route that will answer:
:func:`rules_for` builds that table when the app is built, and a route of the app
without a rule here stops the server from starting (:class:`UndeclaredRoutes`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Need = Literal["public", "caller", "worker", "read", "write", "admin", "metrics", "session",
              "enroll", "bundle"]  # fmt: skip
"""``public``: no token. ``caller``: any valid token (``whoami``). ``worker``: a
daemon token of the namespace, or the namespace's own token, or admin. ``read``:
the namespace's token, an org sibling's, or admin. ``write``: the namespace's own
token, or admin. ``admin``: admin only. ``metrics``: a metrics token, or admin. ``session``: the
dashboard's session cookie of a metrics or an admin token (``ui/session.py``).
``enroll``: a bootstrap token of the namespace, or a daemon's own (a certificate
renewing itself). ``bundle``: what ``worker`` lets in, and a bootstrap token of the
namespace, until it is spent (a launched instance fetches the daemon bundle with it
before its daemon asks for its certificate)."""

NEEDS: tuple[Need, ...] = (
    "public",
    "caller",
    "worker",
    "read",
    "write",
    "admin",
    "metrics",
    "session",
    "enroll",
    "bundle",
)

NS = "/api/namespaces/{ns}"

ROUTES: dict[tuple[str, str], Need] = {
    # health (answered without a token, and without the shared thread pool)
    ("GET", "/healthz"): "public",
    ("GET", "/readyz"): "public",
    ("GET", "/openapi.json"): "public",
    ("GET", "/docs"): "public",
    ("GET", "/docs/assets/{asset}"): "public",  # the docs page's own script and style
    # the server's metrics, every namespace's counts in one document
    ("GET", "/metrics"): "metrics",
    # the dashboard (ui/): its sign-in form and assets need nothing, its pages a
    # session cookie of an admin or a metrics token
    ("GET", "/ui/login"): "public",
    ("POST", "/ui/login"): "public",
    ("POST", "/ui/logout"): "public",
    ("GET", "/ui/assets/{asset}"): "public",
    ("GET", "/ui"): "session",
    ("GET", "/ui/panel"): "session",
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
    ("GET", NS + "/daemon/{sha256}"): "bundle",
    ("POST", NS + "/daemon-certs"): "enroll",
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
    # what the engine's watcher saw: a namespace token, or the provider's own daemon
    # token (the route refuses another provider's)
    ("PUT", NS + "/providers/{name}/observed"): "worker",
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


_PARAM = re.compile(r"\{([a-zA-Z_][a-zA-Z_0-9]*)(?::[a-z]+)?\}")


def rule_key(template: str) -> str:
    """A route's template as :data:`ROUTES` spells it (no ``:path`` convertor)."""
    return _PARAM.sub(lambda m: "{" + m.group(1) + "}", template)


def _compile(template: str) -> re.Pattern[str]:
    """The template compiled exactly as the router compiles it."""
    from starlette.routing import compile_path

    return compile_path(template)[0]


@dataclass(frozen=True)
class Rule:
    """One route of the app: its methods, its compiled path, and what it needs."""

    methods: frozenset[str]
    pattern: re.Pattern[str]
    template: str
    needs: dict[str, Need]


class UndeclaredRoutes(RuntimeError):
    """The app serves routes :data:`ROUTES` gives no rule: the server does not start."""

    def __init__(self, missing: Sequence[tuple[str, str]]) -> None:
        listed = ", ".join(f"{m} {t}" for m, t in missing)
        super().__init__(
            f"routes without an access rule (declare each in "
            f"controlplane/server/access/scopes.py ROUTES): {listed}"
        )
        self.missing = list(missing)


def app_routes(app: Any) -> list[tuple[frozenset[str], str]]:
    """Every HTTP route of ``app`` as ``(methods, template)``, in the order its router
    tries them, templates with their convertors (``{instance_id:path}``)."""
    out: list[tuple[frozenset[str], str]] = []

    def walk(routes: Iterable[Any], prefix: str) -> None:
        for route in routes:
            inner = getattr(route, "original_router", None)
            if inner is not None:  # an included router (its prefix, then its routes)
                ctx = getattr(route, "include_context", None)
                walk(inner.routes, prefix + str(getattr(ctx, "prefix", "") or ""))
                continue
            sub = getattr(route, "routes", None)
            path = getattr(route, "path", None)
            methods = getattr(route, "methods", None)
            if path is None:
                continue
            if methods is None and sub is not None:  # a mount
                walk(sub, prefix + str(path))
                continue
            if methods is None:
                continue  # a websocket route: nothing here serves one
            out.append((frozenset(str(m) for m in methods), prefix + str(path)))

    walk(getattr(app, "routes", []), "")
    return out


def rules_for(routes: Sequence[tuple[Iterable[str], str]]) -> list[Rule]:
    """The gate's table for these routes (the app's, in order); every method of
    every route must have a rule in :data:`ROUTES`, else :class:`UndeclaredRoutes`."""
    rules: list[Rule] = []
    missing: list[tuple[str, str]] = []
    for methods, template in routes:
        key = rule_key(template)
        needs: dict[str, Need] = {}
        for method in sorted(set(methods) - {"HEAD", "OPTIONS"}):
            need = ROUTES.get((method, key))
            if need is None:
                missing.append((method, template))
            else:
                needs[method] = need
        rules.append(Rule(frozenset(needs), _compile(template), key, needs))
    if missing:
        raise UndeclaredRoutes(missing)
    return rules


_DECLARED: list[Rule] | None = None


def _declared() -> list[Rule]:
    """:data:`ROUTES` itself as a table (literal segments first), for callers
    without an app at hand."""
    global _DECLARED
    if _DECLARED is None:
        by_template: dict[str, dict[str, Need]] = {}
        for (m, t), need in ROUTES.items():
            by_template.setdefault(t, {})[m] = need
        ordered = sorted(by_template.items(), key=lambda kv: kv[0].count("{"))
        _DECLARED = [Rule(frozenset(n), _compile(t), t, n) for t, n in ordered]
    return _DECLARED


@dataclass(frozen=True)
class Match:
    need: Need
    template: str | None
    ns: str | None


def match(method: str, path: str, rules: Sequence[Rule] | None = None) -> Match:
    """The need of ``method path`` by the first of ``rules`` (the app's table, see
    :func:`rules_for`) that serves it, as the router picks it, and the namespace it
    names. A path no route serves with this method needs nothing to be told 404 (or
    405) when it is a read, and a token when it carries a body (never read for
    nobody)."""
    method = "GET" if method == "HEAD" else method
    for rule in rules if rules is not None else _declared():
        if method not in rule.methods:
            continue
        found = rule.pattern.match(path)
        if found is not None:
            return Match(rule.needs[method], rule.template, found.groupdict().get("ns"))
    return Match("public" if method in _READS else "caller", None, None)


# -- what a token of each scope may do ------------------------------------------


SCOPES = ("admin", "namespace", "daemon", "metrics", "bootstrap")


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
    if scope == "bootstrap":
        if need in ("enroll", "bundle") and own:
            return None
        return (
            "a bootstrap token may only fetch the daemon bundle and ask for its daemon's "
            "certificate (POST .../daemon-certs)"
        )
    if need == "bundle":
        need = "worker"
    if need == "enroll":
        if scope == "daemon" and own:
            return None
        return "a daemon's certificate is asked for with a bootstrap token or the daemon's own"
    if need == "metrics":
        return None if scope == "metrics" else "this needs an admin token or a metrics token"
    if need == "session":
        return None if scope == "metrics" else "the dashboard needs an admin or a metrics token"
    if scope == "metrics":
        return "a metrics token may only read /metrics"
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
