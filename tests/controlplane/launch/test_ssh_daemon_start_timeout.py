"""A daemon the control plane launched on an SSH host registers while the launch
call is still running, before its instance row exists: it is the instance's daemon
all the same (it holds the instance's token, under the instance's id), so the start
timeout never fails it. On a real sshd host, a real ``lakeshore serve`` with a
three-second start timeout: the daemon keeps its instance and keeps claiming work
well past three timeouts."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from sshd import skip_reason
from test_ssh_launch_tracking import _hosts, _kill_tmux, _provider
from tracking_check import P, agree, wait

pytestmark = [pytest.mark.slow, pytest.mark.needs_sshd]
LIVE = 2.0
START_TIMEOUT = 3.0


def test_a_daemon_registered_during_its_launch_outlives_three_start_timeouts(
    start_server: Any, tmp_path: Path
) -> None:
    why = skip_reason()
    if why:
        pytest.skip(why)
    srv = start_server(
        live_seconds=LIVE,
        env={
            "LAKESHORE_QUEUE_TICK": "0.5",
            "LAKESHORE_QUEUE_START_TIMEOUT": str(START_TIMEOUT),
        },
    )
    api = srv.admin
    hosts = _hosts(tmp_path, 1)
    label = f"root@127.0.0.1:{hosts[0].port}"
    try:
        prov = _provider(api, hosts, tmp_path, "daemon")
        out = api.request("POST", P + "/launch", {"provider": prov, "clientToken": "st1"})
        assert [i["id"] for i in out["instances"]] == [label]
        assert wait(lambda: agree(api, srv.data_dir, prov, LIVE)["claims"] == [label], 30)
        # the daemon registered before the launch answered (and so before the row's start)
        time.sleep(3.5 * START_TIMEOUT)
        seen = agree(api, srv.data_dir, prov, LIVE)
        assert seen["instances"] == [label] and seen["claims"] == [label], seen
        assert seen["rows"] == {label: "running"}, seen
        # and it still claims: work sent now runs on it
        item = api.request("POST", P + f"/providers/{prov}/work", {"command": "echo still-here"})

        def finished() -> Any:
            got = api.request("GET", P + f"/work/{item['id']}")
            return got if got["state"] in ("succeeded", "failed") else None

        done = wait(finished, 60)
        assert done and done["state"] == "succeeded", done
        assert done["outputTail"].strip() == "still-here"
        seen = agree(api, srv.data_dir, prov, LIVE)
        assert seen["instances"] == [label] and seen["rows"] == {label: "running"}, seen
        listed = api.request("GET", P + "/instances", query={"all": "true"})["instances"]
        assert not any("no daemon registered" in str(i.get("reason")) for i in listed), listed
        api.request("DELETE", P + f"/instances/{label}")
    finally:
        for h in hosts:
            _kill_tmux(h)
            h.stop()
