"""dreamlake.controlplane: the lakeshore server and client, and the nymph daemon.

``lakeshore serve`` (FastAPI under uvicorn, 127.0.0.1:7878 by default) keeps its
SQLite file and a 0600 admin token under ``platformdirs.user_data_dir("lakeshore")``
(``--data-dir`` / ``LAKESHORE_DATA_DIR``), or uses PostgreSQL by URL (``--db`` /
``LAKESHORE_DB``); Alembic migrates on start. Every route but ``/healthz`` and
``/readyz`` takes ``Authorization: Bearer <token>``, checked before the body is
read, against the scope the route declares (``server/scopes.py``: admin, namespace
or a daemon's own provider); errors are JSON ``{"error", "detail"}``.

    GET    /healthz                                     the process answers
    GET    /readyz                                      ... and the database
    GET    /api/whoami
    POST   /api/namespaces                              {name, orgId?}        admin
    GET    /api/namespaces
    GET    /api/namespaces/{ns}
    PATCH  /api/namespaces/{ns}                         {orgId | null}        admin
    POST   /api/namespaces/{ns}/tokens                  {label?, expiresInSeconds?,
                                                     scope?, provider?, host?}  admin
    DELETE /api/namespaces/{ns}/providers/{name}/tokens revoke its daemon tokens
    GET    /api/tokens?revoked=                                               admin
    DELETE /api/tokens/{id}                             revoke                admin
    POST   /api/tokens/rotate-admin                     new admin token, old revoked
    POST   /api/namespaces/{ns}/workers                 {providerName, instanceId, host, queues, version}
    GET    /api/namespaces/{ns}/workers?provider=
    POST   /api/namespaces/{ns}/workers/{id}/heartbeat
    GET    /api/namespaces/{ns}/workers/{id}/work?wait=S           200 item | 204
    POST   /api/namespaces/{ns}/workers/{id}/work/{workId}/result  {exitCode, outputTail, error?}
    DELETE /api/namespaces/{ns}/workers/{id}
    GET    /api/namespaces/{ns}/providers/{name}/claims  {live, gone, instances: [{instanceId,
                                                          host, state, lastSeen, queues}]}
    POST   /api/namespaces/{ns}/providers/{name}/work    {command, queue?, timeoutSeconds?}
    GET    /api/namespaces/{ns}/work/{id}?wait=S         waits until finished

A worker is *live* while its last heartbeat is within ``--live-seconds`` (default
30) and it has not deregistered; otherwise it counts as *gone*. Starting a
long-poll is a heartbeat, and a poll held open beats every heartbeat interval
until it ends or its connection closes, so an idle daemon needs no heartbeat of
its own (``docs/controlplane.md``, "Connections: a fleet of daemons"). A live worker is
``joining`` until it first asks for work, then ``active``. Work states: queued,
running, succeeded, failed, lost (its worker went away before reporting).

Concurrency, replicas over PostgreSQL, the shared secret key, limits and file
modes: ``docs/controlplane.md``.

Modules: ``db`` (Base, engine, migrations), ``models`` (core tables), ``server``
(app factory, auth, routes), ``client`` (stdlib HTTP client), ``nymph`` (daemon),
``registry`` (provider rows, secrets, modes).
"""
