"""Launch routes (mounted by the app factory as ``router``).

    POST   /api/namespaces/{ns}/launch             {mode?, runConfig?, provider?, count?,
                                                    clientToken?, command?} → 201
    GET    /api/namespaces/{ns}/instances          ?provider ?all ?live=false
    DELETE /api/namespaces/{ns}/instances/{id}     terminate; revokes the instance's token
    GET    /api/namespaces/{ns}/daemon/{sha256}    the daemon bundle, by content hash
    /api/namespaces/{ns}/queues …                  see ``queues.routes``

A launch answers 201 with the instances, the merged kwargs with secret markers left
as markers, and the launcher's own answer scrubbed of every secret value.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends, Request
from fastapi.responses import FileResponse
from sqlalchemy.orm import Session

from ..queues import routes as queue_routes
from ..registry import service as registry
from ..registry.crypto import SecretBox
from ..registry.routes.common import _box, _call, _object, _scope
from ..server.deps import Access, get_session, require_namespace
from ..server.errors import ApiError
from . import bundle, service
from .routes_common import server_url

router = APIRouter()
router.include_router(queue_routes.router)
P = "/api/namespaces/{ns}"


@router.post(P + "/launch", status_code=201)
def launch(
    request: Request,
    body: Any = Body(...),
    scope: registry.Scope = Depends(_scope),
    session: Session = Depends(get_session),
    box: SecretBox = Depends(_box),
) -> dict[str, Any]:
    return _call(  # type: ignore[no-any-return]
        service.launch,
        session,
        scope,
        box,
        _object(body),
        state=request.app.state,
        server_url=server_url(request),
        data_dir=request.app.state.settings.data_dir,
    )


@router.get(P + "/instances")
def list_instances(
    request: Request,
    provider: str | None = None,
    all: bool = False,
    live: bool = True,
    scope: registry.Scope = Depends(_scope),
    session: Session = Depends(get_session),
    box: SecretBox = Depends(_box),
) -> dict[str, Any]:
    return _call(  # type: ignore[no-any-return]
        service.list_instances,
        session,
        scope,
        box,
        request.app.state,
        provider=provider,
        include_gone=all,
        live=live,
    )


@router.delete(P + "/instances/{instance_id:path}")
def terminate_instance(
    instance_id: str,
    request: Request,
    scope: registry.Scope = Depends(_scope),
    session: Session = Depends(get_session),
    box: SecretBox = Depends(_box),
) -> dict[str, Any]:
    return _call(  # type: ignore[no-any-return]
        service.terminate, session, scope, box, request.app.state, instance_id
    )


@router.get(P + "/daemon/{sha256}")
def daemon_bundle(
    sha256: str, request: Request, access: Access = Depends(require_namespace)
) -> FileResponse:
    path = bundle.lookup(request.app.state, request.app.state.settings.data_dir, sha256)
    if path is None:
        raise ApiError(404, "not_found", f"no daemon bundle with sha256 {sha256}")
    return FileResponse(path, media_type="application/x-tar", filename=f"daemon-{sha256}.tar")
