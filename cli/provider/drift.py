"""``dreamlake provider drift``: the drift check, once, on demand.

Registered on the ``provider`` group by ``cli.commands``; it only parses its flags,
calls the engine verb and renders the result.
"""

from __future__ import annotations

from ..groups import provider_app
from ..invoke import announce, call, emit, progress
from ..options import DreamDir, Events, Json, NameArg, NameOpt, one_name


@provider_app.command("drift")
def drift_cmd(
    name_arg: NameArg = None,
    name: NameOpt = None,
    dream_dir: DreamDir = None,
    as_json: Json = False,
    events: Events = False,
) -> None:
    """Check once whether the infrastructure moved from its state (a refresh that writes
    no state) and record what drifted; status reads the record."""
    from dreamlake.engine.verbs.drift import drift

    n = one_name(name_arg, name)
    announce("drift", n, dream_dir, as_json)
    emit(
        call(
            "drift",
            n,
            dream_dir,
            lambda: drift(n, dream_dir=dream_dir, progress=progress(as_json)),
            as_json,
            events,
        ),
        as_json,
    )
