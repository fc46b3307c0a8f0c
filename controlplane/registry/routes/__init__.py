"""The registry's HTTP routes (mounted by the core app factory as ``router``).

    /api/namespaces/{ns}/providers                 GET (?hidden ?deleted ?all), POST
    /api/namespaces/{ns}/providers/{name}          GET, PATCH, DELETE (soft)
    /api/namespaces/{ns}/providers/{name}/restore  POST
    /api/namespaces/{ns}/providers/{name}/test     POST (offline checks)
    /api/namespaces/{ns}/providers/{name}/observed PUT (what the engine's watcher saw)
    /api/namespaces/{ns}/secrets                   GET (names and kinds only), POST
    /api/namespaces/{ns}/secrets/{name}            PUT, DELETE (?force)
    /api/namespaces/{ns}/modes                     GET, POST
    /api/namespaces/{ns}/modes/{name}              GET, PATCH (merge patch), DELETE
    /api/namespaces/{ns}/launch/preview            POST {mode?, runConfig?, provider?}
    (POST /api/namespaces/{ns}/launch lives in ``controlplane.launch.routes``)

Secret values go in (POST/PUT) and never come out.
"""

from __future__ import annotations

from fastapi import APIRouter

from . import launch, modes, observed, providers, secrets

router = APIRouter()
for _module in (providers, observed, secrets, modes, launch):
    router.include_router(_module.router)

__all__ = ["router"]
