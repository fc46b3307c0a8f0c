"""Every request's time, by method, route template and status class, and the
requests in flight: a pure ASGI middleware mounted inside the fleet's hot path
(``fleet/hotpath.py``), so the heartbeats and idle long-polls it answers on its own
pay nothing here (they are counted by ``lakeshore_heartbeats_received_total`` and
``lakeshore_long_polls_held``).

The route label is the template of the route that answered
(``/api/namespaces/{ns}/providers/{name}``), else, for a request the access gate
refused before routing, the template of the route it asked for; a path no route
serves is ``unmatched``. Never the raw path: a label's values stay as few as the
app's routes.
"""

from __future__ import annotations

import time
from typing import Any

from ..access import scopes

UNMATCHED = "unmatched"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class RequestMetrics:
    def __init__(self, app: Any, state: Any) -> None:
        self.app = app
        self.state = state
        self._templates: dict[str, str] = {}

    def _route(self, scope: dict[str, Any]) -> str:
        route = scope.get("route")
        path = getattr(route, "path", None)
        if path is None:
            rules = getattr(self.state, "route_rules", None)
            if rules is None:
                return UNMATCHED
            found = scopes.match(scope["method"], scope["path"], rules).template
            return found if found is not None else UNMATCHED
        template = self._templates.get(path)
        if template is None:
            template = self._templates[path] = scopes.rule_key(path)
        return template

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        metrics = getattr(self.state, "metrics", None)
        if scope["type"] != "http" or metrics is None:
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_status(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        metrics.in_flight.inc()
        try:
            await self.app(scope, receive, send_status)
        finally:
            metrics.in_flight.dec()
            method = scope["method"] if scope["method"] in METHODS else "other"
            metrics.request_seconds.labels(
                method, self._route(scope), f"{status // 100}xx"
            ).observe(time.perf_counter() - started)
