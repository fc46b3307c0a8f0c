"""The launch-tracking check the real-component scenarios run at every step: what
``instances list`` says, what ``claims`` says and what the database holds agree."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

P = "/api/namespaces/default"


def wait(predicate: Any, timeout: float, interval: float = 0.3) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def agree(api: Any, data_dir: Path, provider: str, live_seconds: float) -> dict[str, Any]:
    """Read all three and assert they agree (a worker whose launch has not returned
    yet is starting: its row comes with the answer); returns what they said:
    ``{"instances": [live ids], "orphans": [ids], "claims": [worker instance ids],
    "rows": {id: state}}``. The three are read one after the other, so while a queue
    launches or reaps one may be a step ahead: they are read again, up to five
    times, before a disagreement counts."""
    for _ in range(4):
        try:
            return _agree_once(api, data_dir, provider)
        except AssertionError:
            time.sleep(0.2)
    return _agree_once(api, data_dir, provider)


def _agree_once(api: Any, data_dir: Path, provider: str) -> dict[str, Any]:
    listed = api.request("GET", P + "/instances", query={"provider": provider})["instances"]
    claims = api.request("GET", P + f"/providers/{provider}/claims")
    db = sqlite3.connect(data_dir / "lakeshore.db")
    try:
        rows = db.execute(
            "SELECT instance_id, state, terminated_at, token_id FROM instances "
            "WHERE provider_name = ? ORDER BY id",
            (provider,),
        ).fetchall()
        workers = db.execute(
            "SELECT instance_id, token_id FROM workers WHERE provider_name = ? "
            "AND deregistered_at IS NULL",
            (provider,),
        ).fetchall()
        pending = db.execute("SELECT result FROM launch_requests WHERE state != 'done'").fetchall()
    finally:
        db.close()
    import json

    launching = {t for (res,) in pending for t in (json.loads(res or "{}").get("tokenIds") or [])}
    starting = {w[0] for w in workers if w[1] in launching}
    live_rows = [r[0] for r in rows if r[2] is None]
    shown = [i["id"] for i in listed if i["state"] != "orphan"]
    orphans = [i for i in listed if i["state"] == "orphan"]
    assert sorted(shown) == sorted(live_rows), (listed, rows)
    claimed = sorted(i["instanceId"] for i in claims["instances"])
    # every live worker either belongs to a live row or is listed as an orphan
    orphan_workers = {o["details"]["workerInstanceId"] for o in orphans}
    for wid in claimed:
        assert (
            wid in orphan_workers
            or wid in starting
            or any(wid == r.split("/")[0] for r in live_rows)
            or any(wid == r for r in live_rows)
        ), (wid, listed, rows)
    # an orphan is a worker the claims still show (until it is gone)
    assert orphan_workers <= set(claimed) | {w[0] for w in workers}, (orphans, claims)
    return {
        "instances": shown,
        "orphans": [o["id"] for o in orphans],
        "claims": claimed,
        "rows": {r[0]: r[1] for r in rows},
        "all": rows,
    }
