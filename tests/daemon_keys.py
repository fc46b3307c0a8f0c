"""The key a test provider's daemon runs under on its host: the provider's identity
(the ``id`` in provider.json), as the engine keys its install folder, tmux session
and systemd unit."""

from __future__ import annotations

import json
from pathlib import Path


def daemon_key(project: Path, name: str) -> str:
    from dreamlake.engine.daemon.key import key_of

    record = project / ".dream" / "providers" / name / "provider.json"
    return key_of(str(json.loads(record.read_text())["id"]))
