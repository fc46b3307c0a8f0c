"""connect on a provider a live worker already claims: ``exists``, rc 0, files [] and
no shell opened at all (the factory would fail the test if called)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from dreamlake.cli.render import render
from dreamlake.controlplane.client import Client
from dreamlake.engine.verbs.connect import connect
from dreamlake.engine.verbs.create import create


def _never(target: Any) -> Any:
    raise AssertionError(f"connect opened a shell ({target}) although a worker claims it")


def test_live_claim_means_exists_and_no_shell(control_plane, project: Path) -> None:  # type: ignore[no-untyped-def]
    name = f"lab-{uuid.uuid4().hex[:6]}"
    create(name, "ssh", cwd=project)
    adopt = project / ".dream" / "providers" / name / "adopt.json"
    data = json.loads(adopt.read_text())
    data.update(host="127.0.0.1", user="root", queues=["default"])
    adopt.write_text(json.dumps(data))

    admin = Client(control_plane.url, control_plane.admin_token_file.read_text().strip())
    worker = admin.register(name, "i-0abc", host="box", queues=["default"])
    try:
        res = connect(name, cwd=project, shell_factory=_never)
        assert (res.status, res.exit_code, res.files) == ("exists", 0, [])
        assert res.claim is not None and res.claim.live == 1
        assert res.claim.instances == ["i-0abc"]
        assert res.next_action is not None and res.next_action.kind == "run"
        assert res.to_wire()["files"] == []
        prose = render(res)
        assert "⚠ 1 live worker already claims" in prose
        assert "nothing was overwritten" not in prose  # create's words, not connect's
    finally:
        admin.deregister(worker["workerId"] if "workerId" in worker else worker["id"])
