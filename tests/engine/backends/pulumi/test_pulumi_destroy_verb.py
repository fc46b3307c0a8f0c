"""``dreamlake provider destroy`` on a Pulumi provider, through the SDK up to the
STAND-IN for the pulumi CLI (see test_pulumi_automation): a preview without --yes
that changes nothing, then the destroy, after which the world says scaffolded."""

from __future__ import annotations

from pathlib import Path

import pytest
from dreamlake.engine.backends.pulumi import PulumiBackend
from dreamlake.engine.verbs.destroy import destroy
from dreamlake.engine.verbs.status import status
from pulumi_helpers import LOCAL_OK, write_provider
from test_pulumi_automation import standin as standin  # the fixture, shared

pytestmark = pytest.mark.slow


def test_destroy_previews_then_destroys(
    standin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAKESHORE_URL", "http://127.0.0.1:9")  # no control plane
    d = write_provider(tmp_path, config=LOCAL_OK)
    backend = PulumiBackend()
    assert backend.plan(d).result == "ok"
    assert backend.apply(d).result == "applied"
    root = str(tmp_path)

    preview = destroy("lab", dream_dir=root)
    assert preview.status == "needs_input" and preview.files == []
    assert preview.plan is not None and preview.plan.destroy == 2
    assert preview.next_action is not None and preview.next_action.approval is True
    assert preview.next_action.command.startswith("dreamlake provider destroy -n lab --yes")
    assert backend.observe_state(d).present  # nothing was destroyed

    done = destroy("lab", yes=True, dream_dir=root)
    assert done.status == "scaffolded", done.error
    assert not backend.observe_state(d).present
    assert status("lab", dream_dir=root).status == "scaffolded"
