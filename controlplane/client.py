"""A small client of the lakeshore API (standard library only, so it is cheap to
import on a remote host): namespaces and tokens, worker register / heartbeat /
poll / report / deregister, claims, submitting work and reading its result.

Connections: by default every request opens a new connection and closes it
(what a command-line call wants). ``keep_alive=True`` keeps one HTTP/1.1
connection open between requests (see :mod:`.connection`): the daemon holds one
such client for its long-poll and another for heartbeats and results. A
keep-alive client carries one request at a time; :meth:`Client.sibling` gives
another with its own connection. A client without keep-alive may be shared by
threads: each request opens its own connection. Over TLS a new connection offers
the last session the server gave this client or its siblings
(:mod:`.tlsresume`), so a reconnect is a resumed handshake, not a full one.

Errors: :class:`Unreachable` when no answer came (connection refused, timeout,
DNS); :class:`ApiFailure` when the server answered with an error status (its
``status``, ``error`` and ``detail`` say which, and ``retry_after`` the seconds a
503's ``Retry-After`` asks for). Both are
:class:`dreamlake.engine.contract.errors.ControlPlaneError`.
"""

from __future__ import annotations

import dataclasses
import http.client
import json
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dreamlake.engine.contract.errors import ControlPlaneError

from .connection import Answer, Connection, Observer, describe, retry_after
from .tlsclient import answers_without_cert, explain, plain_to_tls_hint, refused_cert_hint
from .tlsresume import Sessions

__all__ = ["HEADER_HOOKS", "REQUEST_SPAN", "ApiFailure", "Client", "Unreachable", "Untrusted"]

HEADER_HOOKS: list[Callable[[dict[str, str]], None]] = []
"""Functions that add headers to every request a :class:`Client` makes: a command
or a daemon that traces puts ``engine/settings/tracing.py``'s ``inject`` here, so
its trace goes on in the server."""

REQUEST_SPAN: Callable[[str, str, str, Callable[[], Answer]], Answer] | None = None
"""When set, every request a :class:`Client` makes is sent through it, as
``REQUEST_SPAN(method, url, path, send)``, ``send()`` making the request (its
headers, :data:`HEADER_HOOKS` included, are made inside) and returning the answer:
a daemon that traces (``nymph/tracing.py``) makes each request a client span there.
Unset (None, the default) a request pays one test for it."""


class Unreachable(ControlPlaneError):
    """No answer from the control plane (``url``: the one that did not answer)."""

    kind = "lakeshore_unreachable"

    def __init__(self, message: str, url: str | None = None) -> None:
        super().__init__(message)
        self.url = url


class Untrusted(Unreachable):
    """The server was not verified over TLS (a certificate no trusted CA signed, a
    CA file that cannot be read, plain HTTP to a TLS port or TLS to a plain one):
    ``advice`` says what to change. Nothing turns verification off."""

    kind = "lakeshore_untrusted"

    def __init__(
        self, message: str, url: str | None = None, advice: str = "", reason: str = "tls"
    ) -> None:
        super().__init__(message, url)
        self.advice = advice
        self.reason = reason  # see tlsclient.REASONS


class ApiFailure(ControlPlaneError):
    """The control plane answered with an error status."""

    def __init__(
        self, status: int, error: str, detail: Any, url: str, retry_after: float | None = None
    ) -> None:
        super().__init__(f"{status} {error}: {detail} ({url})")
        self.status = status
        self.error = error
        self.detail = detail
        self.url = url
        self.retry_after = retry_after


@dataclass
class Client:
    url: str
    token: str | None = None
    namespace: str = "default"
    timeout: float = 10.0
    keep_alive: bool = False
    observer: Observer | None = field(default=None, repr=False, compare=False)
    source_address: str | None = None  # connect from this local address (several hosts')
    ca: str | None = None  # the CA certificate an https server is verified with (else LAKESHORE_CA)
    cert: str | None = None  # a client certificate with its key (PEM): a daemon's identity
    # the last TLS session per server, offered by the next connection (shared by siblings)
    sessions: Sessions = field(default_factory=Sessions, repr=False, compare=False)
    _conn: Connection | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def from_control_plane(cls, cp: Any, *, timeout: float = 10.0) -> Client:
        """From an ``engine.lakeshore.ControlPlane``."""
        return cls(
            url=cp.url,
            token=cp.token,
            namespace=cp.namespace,
            timeout=timeout,
            ca=getattr(cp, "ca", None),
        )

    # -- plumbing ---------------------------------------------------------------

    def _ns(self, namespace: str | None) -> str:
        return urllib.parse.quote(namespace or self.namespace, safe="")

    def sibling(self) -> Client:
        """The same client with a connection of its own."""
        return dataclasses.replace(self)

    def close(self) -> None:
        """Close a kept connection (the next request opens a new one)."""
        if self._conn is not None:
            self._conn.close()

    def abort(self) -> None:
        """End a request in flight on this client's kept connection (from another
        thread); the caller of that request gets :class:`Unreachable`."""
        if self._conn is not None:
            self._conn.abort()

    @property
    def connection(self) -> Connection:
        return self.connection_to(self.url)

    def connection_to(self, url: str) -> Connection:
        if self._conn is None or self._conn.url != url:
            self._conn = Connection(
                url,
                keep_alive=self.keep_alive,
                observer=self.observer,
                source_address=self.source_address,
                ca=self.ca,
                cert=self.cert,
                sessions=self.sessions,
            )
        self._conn.cert = self.cert  # a renewed certificate: the next request shakes hands again
        return self._conn

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> Any:
        """One HTTP call. Returns the decoded JSON body (None for 204)."""
        if query:
            path += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        base = self.url  # another thread may move this client on meanwhile
        url = base.rstrip("/") + path
        data = None if body is None else json.dumps(body).encode("utf-8")
        wait = timeout or self.timeout
        if REQUEST_SPAN is None:
            answer = self._exchange(base, method, path, data, wait)
        else:  # a client span around it (nymph/tracing.py)
            answer = REQUEST_SPAN(
                method, base, path, lambda: self._exchange(base, method, path, data, wait)
            )
        raw = answer.body
        if answer.status >= 400:
            try:
                payload = json.loads(raw)
            except ValueError:
                payload = {"error": "http_error", "detail": raw.decode("utf-8", "replace")[:500]}
            if not isinstance(payload, dict):
                payload = {"error": "http_error", "detail": payload}
            raise ApiFailure(
                answer.status,
                str(payload.get("error", "error")),
                payload.get("detail"),
                url,
                retry_after(answer.header("Retry-After")),
            )
        if answer.status == 204 or not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise Unreachable(
                f"lakeshore at {base} sent a body that is not JSON: {exc}", base
            ) from None

    def _exchange(
        self, base: str, method: str, path: str, data: bytes | None, timeout: float
    ) -> Answer:
        """Send one request to ``base`` and read its answer, whatever its status;
        no answer raises :class:`Unreachable` (or :class:`Untrusted`)."""
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        for hook in HEADER_HOOKS:  # the trace context (engine/settings/tracing.py)
            hook(headers)
        try:
            return self.connection_to(base).request(method, path, data, headers, timeout=timeout)
        except (OSError, http.client.HTTPException) as exc:
            # OSError covers refused, reset and timed out; HTTPException a cut or garbled answer
            trust = refused_cert_hint(exc, base, self.cert)
            if trust is not None and not answers_without_cert(base, self.ca, min(timeout, 5.0)):
                trust = None  # it answers no one now: going away, not refusing this certificate
            trust = trust or explain(exc, base, self.ca)
            if trust is not None:
                raise Untrusted(trust.message, base, trust.advice, trust.reason) from None
            plain = plain_to_tls_hint(exc, base)
            if plain is not None:
                raise Untrusted(plain, base, f"use {'https' + base[4:]}", "plain_to_tls") from None
            raise Unreachable(
                f"lakeshore at {base} is unreachable: {describe(exc)}", base
            ) from None
        except ValueError as exc:  # not an http(s) URL (after OSError: a TLS error is both)
            raise Unreachable(f"lakeshore at {base} is unreachable: {exc}", base) from None

    # -- server ---------------------------------------------------------------------

    def healthz(self) -> dict[str, Any]:
        return self.request("GET", "/healthz")  # type: ignore[no-any-return]

    def whoami(self) -> dict[str, Any]:
        return self.request("GET", "/api/whoami")  # type: ignore[no-any-return]

    def create_namespace(self, name: str, org_id: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"name": name}
        if org_id is not None:
            body["orgId"] = org_id
        return self.request("POST", "/api/namespaces", body)  # type: ignore[no-any-return]

    def list_namespaces(self) -> list[dict[str, Any]]:
        return self.request("GET", "/api/namespaces")  # type: ignore[no-any-return]

    def create_token(
        self,
        namespace: str,
        label: str | None = None,
        expires_in: int | None = None,
        **daemon: Any,
    ) -> str:
        """A namespace token; with ``scope="daemon", provider=..., host=...`` (and
        ``replaces``, the host's earlier token) a daemon's token for one provider."""
        body: dict[str, Any] = {"label": label} if label else {}
        if expires_in is not None:
            body["expiresInSeconds"] = expires_in
        body.update({k: v for k, v in daemon.items() if v is not None})
        out = self.request("POST", f"/api/namespaces/{self._ns(namespace)}/tokens", body)
        return str(out["token"])

    # -- workers (what a daemon calls) -------------------------------------------

    def register(
        self,
        provider: str,
        instance_id: str,
        *,
        host: str = "",
        queues: list[str] | None = None,
        version: str = "",
        identity: str | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "providerName": provider,
            "instanceId": instance_id,
            "host": host,
            "queues": list(queues or []),
            "version": version,
        }
        if identity:
            body["identity"] = identity
        return self.request("POST", f"/api/namespaces/{self._ns(None)}/workers", body)  # type: ignore[no-any-return]

    def heartbeat(self, worker_id: str) -> dict[str, Any]:
        path = f"/api/namespaces/{self._ns(None)}/workers/{urllib.parse.quote(worker_id)}/heartbeat"
        return self.request("POST", path, {})  # type: ignore[no-any-return]

    def poll_work(self, worker_id: str, wait: float = 0.0) -> dict[str, Any] | None:
        """The next work item for this worker, or None after ``wait`` seconds."""
        path = f"/api/namespaces/{self._ns(None)}/workers/{urllib.parse.quote(worker_id)}/work"
        return self.request("GET", path, query={"wait": wait}, timeout=wait + self.timeout)  # type: ignore[no-any-return]

    def report(
        self,
        worker_id: str,
        work_id: str,
        *,
        exit_code: int | None,
        output_tail: str = "",
        error: str | None = None,
    ) -> dict[str, Any]:
        path = (
            f"/api/namespaces/{self._ns(None)}/workers/{urllib.parse.quote(worker_id)}"
            f"/work/{urllib.parse.quote(work_id)}/result"
        )
        body = {"exitCode": exit_code, "outputTail": output_tail, "error": error}
        return self.request("POST", path, body)  # type: ignore[no-any-return]

    def deregister(self, worker_id: str) -> None:
        path = f"/api/namespaces/{self._ns(None)}/workers/{urllib.parse.quote(worker_id)}"
        self.request("DELETE", path)

    def workers(self, provider: str | None = None) -> list[dict[str, Any]]:
        path = f"/api/namespaces/{self._ns(None)}/workers"
        return self.request("GET", path, query={"provider": provider})  # type: ignore[no-any-return]

    # -- claims and work (what the engine and people call) ------------------------

    def claims(self, provider: str, identity: str | None = None) -> dict[str, Any]:
        path = f"/api/namespaces/{self._ns(None)}/providers/{urllib.parse.quote(provider)}/claims"
        query = {"identity": identity} if identity else None
        return self.request("GET", path, query=query)  # type: ignore[no-any-return]

    def claims_many(self, providers: list[tuple[str, str | None]]) -> list[dict[str, Any]]:
        """The claims of many ``(provider, identity)`` pairs in one request, in order."""
        body = {"providers": [{"name": n, **({"identity": i} if i else {})} for n, i in providers]}
        out = self.request("POST", f"/api/namespaces/{self._ns(None)}/claims/query", body)
        return list(out["claims"])

    # -- provider rows (the registry) -------------------------------------------

    def _row_path(self, name: str | None = None) -> str:
        base = f"/api/namespaces/{self._ns(None)}/providers"
        return base if name is None else f"{base}/{urllib.parse.quote(name, safe='')}"

    def provider_rows(self, *, all_: bool = False) -> list[dict[str, Any]]:
        query = {"all": "true"} if all_ else None
        return self.request("GET", self._row_path(), query=query)  # type: ignore[no-any-return]

    def provider_row(self, name: str) -> dict[str, Any]:
        return self.request("GET", self._row_path(name))  # type: ignore[no-any-return]

    def create_provider_row(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.request("POST", self._row_path(), body)  # type: ignore[no-any-return]

    def update_provider_row(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.request("PATCH", self._row_path(name), body)  # type: ignore[no-any-return]

    def delete_provider_row(self, name: str) -> dict[str, Any]:
        return self.request("DELETE", self._row_path(name))  # type: ignore[no-any-return]

    def submit_work(
        self,
        provider: str,
        command: str,
        *,
        queue: str | None = None,
        timeout_seconds: float | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"command": command}
        if queue is not None:
            body["queue"] = queue
        if timeout_seconds is not None:
            body["timeoutSeconds"] = timeout_seconds
        path = f"/api/namespaces/{self._ns(None)}/providers/{urllib.parse.quote(provider)}/work"
        return self.request("POST", path, body)  # type: ignore[no-any-return]

    def get_work(self, work_id: str, wait: float = 0.0) -> dict[str, Any]:
        """A work item; with ``wait``, block until it has finished (or the wait ends)."""
        path = f"/api/namespaces/{self._ns(None)}/work/{urllib.parse.quote(work_id)}"
        return self.request("GET", path, query={"wait": wait}, timeout=wait + self.timeout)  # type: ignore[no-any-return]
