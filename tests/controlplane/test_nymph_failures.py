"""nymph keeps serving when one piece of work goes wrong: a runner that fails is
reported as a failed result, and a result the server keeps failing on is dropped
after a bounded number of tries instead of stalling the poll loop."""

from __future__ import annotations

import threading
from typing import Any

from dreamlake.controlplane.client import ApiFailure
from dreamlake.controlplane.nymph.daemon import MAX_REJECTED_REPORTS, Daemon, DaemonConfig
from dreamlake.controlplane.nymph.runner import RunResult
from lakeshore_fixtures import ServerProc

SHARES_SERVER = True  # its one provider name is its own: the session's server


class BrokenRunner:
    """Fault injection: a runner whose own code raises (not the command failing)."""

    def run(self, command: str, **_: Any) -> RunResult:
        raise RuntimeError("runner exploded")


def _config(provider: str) -> DaemonConfig:
    return DaemonConfig(
        provider=provider,
        queues=["q"],
        instance_id="i-fail",
        host="h",
        version="t",
        poll_wait=0.5,
        max_backoff=0.2,
    )


def test_a_runner_failure_is_reported_as_a_failed_result(server: ServerProc) -> None:
    admin = server.admin
    daemon = Daemon(client=admin, config=_config("flaky"), runner=BrokenRunner())  # type: ignore[arg-type]
    worker_id = daemon.ensure_registered()
    work = admin.submit_work("flaky", "echo hi")
    item = admin.poll_work(worker_id, wait=5)
    assert item is not None and item["id"] == work["id"]
    daemon.execute(worker_id, item)
    done = admin.get_work(work["id"], wait=5)
    assert done["state"] == "failed", done
    assert "the runner failed: RuntimeError: runner exploded" in (done.get("error") or "")


class RejectingClient:
    """Fault injection: a control plane that answers 500 to every result report
    (the real server cannot be made to do that on demand)."""

    url = "http://127.0.0.1:9"
    namespace = "default"

    def __init__(self) -> None:
        self.reports = 0

    def report(self, *_: Any, **__: Any) -> None:
        self.reports += 1
        raise ApiFailure(500, "internal_error", "boom", self.url)


def test_a_result_the_server_keeps_failing_on_is_dropped_not_retried_forever() -> None:
    client = RejectingClient()
    daemon = Daemon(client=client, config=_config("p"))  # type: ignore[arg-type]
    t = threading.Thread(target=daemon.deliver, args=("w", "work-1", RunResult(0, "")))
    t.start()
    t.join(timeout=30)
    assert not t.is_alive(), "deliver kept retrying a result the server refuses"
    assert client.reports == MAX_REJECTED_REPORTS


class SheddingClient:
    """Fault injection: a control plane shedding load (503 + Retry-After: 0) for
    more tries than MAX_REJECTED_REPORTS, then taking the result."""

    url = "http://127.0.0.1:9"
    namespace = "default"

    def __init__(self, sheds: int) -> None:
        self.sheds = sheds
        self.reports = 0

    def report(self, *_: Any, **__: Any) -> None:
        self.reports += 1
        if self.reports <= self.sheds:
            raise ApiFailure(503, "overloaded", "shedding load", self.url, retry_after=0.0)


def test_a_result_shed_with_retry_after_is_retried_not_dropped() -> None:
    client = SheddingClient(sheds=MAX_REJECTED_REPORTS * 2)
    config = _config("p")
    config.max_backoff = 0.01
    daemon = Daemon(client=client, config=config)  # type: ignore[arg-type]
    t = threading.Thread(target=daemon.deliver, args=("w", "work-1", RunResult(0, "")))
    t.start()
    t.join(timeout=30)
    assert not t.is_alive()
    assert client.reports == MAX_REJECTED_REPORTS * 2 + 1  # delivered at last
