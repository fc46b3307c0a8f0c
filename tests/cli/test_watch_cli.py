"""``dreamlake provider watch`` in prose: one readable line per event, the next
action at its end, a gated step flagged for a person."""

from __future__ import annotations

from dreamlake.cli.provider.watch import _line

AT = "2026-01-02T03:04:05Z"
NEXT = {"kind": "run", "command": "dreamlake provider reconcile -n lab --yes", "approval": True}


def test_each_event_is_one_line() -> None:
    state = {
        "event": "state", "provider": "lab", "status": "connected", "targetStatus": "suspended",
        "step": "suspend", "gated": True, "does": "report", "why": "running", "nextAction": NEXT,
        "at": AT,
    }  # fmt: skip
    line = _line(state)
    assert line.startswith("03:04:05 lab: connected (target suspended) → suspend [report]")
    assert "needs a person's yes" in line and line.endswith(f"next: {NEXT['command']}")
    failed = {
        "event": "failed", "provider": "lab", "step": "connect", "status": "error",
        "error": "host down", "retryInSeconds": 60.0, "nextAction": None, "at": AT,
    }  # fmt: skip
    assert _line(failed) == "03:04:05 lab: ✗ connect failed (host down); tried again in 60s"
    acted = {"event": "acted", "provider": "lab", "step": "connect", "status": "connected",
             "nextAction": None, "at": AT}  # fmt: skip
    assert _line(acted) == "03:04:05 lab: acted step=connect, status=connected"
    end = {"event": "pass", "providers": 3, "acted": 1, "gated": 1, "published": 3,
           "seconds": 0.5, "drift": True, "at": AT}  # fmt: skip
    assert _line(end) == (
        "03:04:05 pass: 3 provider(s), 1 acted, 1 gated, 3 published, 0.5s (drift checked)"
    )
    start = {"event": "watching", "root": "/r", "providers": "all", "interval": 60.0,
             "driftInterval": 0.0, "holder": {"pid": 7}, "lock": "/r/.dream/watch.lock"}  # fmt: skip
    assert _line(start) == (
        "watching /r (all) every 60s, drift never checked; pid 7 holds /r/.dream/watch.lock"
    )
    assert _line({"event": "stopped", "at": AT}) == "03:04:05 stopped"
    edit = {**state, "gated": False, "nextAction": {"kind": "edit_then_continue", "file": "/f",
            "command": "dreamlake provider create -n lab --continue"}}  # fmt: skip
    assert _line(edit).endswith("next: edit /f, then dreamlake provider create -n lab --continue")
