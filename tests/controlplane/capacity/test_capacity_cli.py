"""``lakeshore capacity`` and ``lakeshore lease`` through the real binary against a
real ``lakeshore serve``: the listing in prose and JSON, the price table from a file,
a lease granted on a live worker, one pending with its reason (exit 0), release."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from lakeshore_fixtures import clean_env, lakeshore_argv

pytestmark = pytest.mark.slow


def test_capacity_and_lease_from_the_cli(start_server: Any, tmp_path: Path) -> None:
    srv = start_server(live_seconds=60)
    conn = ["--server", srv.url, "--token-file", str(srv.data_dir / "admin.token")]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*lakeshore_argv(), *args, *conn],
            capture_output=True,
            text=True,
            env=clean_env(),
            timeout=120,
        )

    kwargs = tmp_path / "kwargs.yaml"
    kwargs.write_text(
        "hosts: [box-1]\ncapacity:\n  offers:\n    - {name: box-1, cpus: 8, memoryGb: 32}\n"
    )
    added = run(
        "providers",
        "add",
        "lab",
        "--launcher",
        "SSH",
        "--dispatch",
        "daemon",
        "--kwargs-file",
        str(kwargs),
    )
    assert added.returncode == 0, added.stderr
    prices = tmp_path / "prices.yaml"
    prices.write_text("lab: {box-1: 0.05}\n")
    put = run("capacity", "prices", "--file", str(prices))
    assert put.returncode == 0, put.stderr
    assert "lab/box-1  0.05/h" in put.stdout
    # the request body as docs/capacity.md shows it is accepted as the file too
    body = tmp_path / "prices.json"
    body.write_text(json.dumps({"prices": {"lab": {"box-1": 0.05}}}))
    put = run("capacity", "prices", "--file", str(body), "--json")
    assert put.returncode == 0, put.stderr
    assert json.loads(put.stdout)["prices"] == {"lab": {"box-1": 0.05}}
    srv.admin.register("lab", "box-1", host="box-1")

    listed = run("capacity")
    assert listed.returncode == 0, listed.stderr
    assert (
        "lab (SSH)  workers 1 live, 1 idle, 0 launching  instances 1/1  leases 0" in listed.stdout
    )
    assert "8 CPU, 32 GB" in listed.stdout and "0.05/h" in listed.stdout
    doc = json.loads(run("capacity", "--json").stdout)
    assert doc["providers"][0]["offers"][0]["pricePerHour"] == 0.05

    # --providers as the body's providers (comma-separated; --provider P repeats)
    nowhere = run("capacity", "decide", "--cpus", "4", "--providers", "other,else", "--json")
    assert nowhere.returncode == 0, nowhere.stderr
    assert json.loads(nowhere.stdout)["chosen"] is None
    got = run("lease", "request", "--cpus", "4", "--ttl", "600", "--providers", "lab", "--json")
    assert got.returncode == 0, got.stderr
    lease = json.loads(got.stdout)
    assert lease["state"] == "granted" and lease["offer"] == "box-1"
    waiting = run("lease", "request", "--cpus", "4")
    assert waiting.returncode == 0, waiting.stderr
    assert " pending " in waiting.stdout and "limit-reached" in waiting.stdout
    assert "next: lakeshore lease show lse-" in waiting.stdout
    too_big = run("capacity", "decide", "--cpus", "64")
    assert "does-not-fit — wants 64 CPUs, offers 8" in too_big.stdout

    shown = run("lease", "list")
    assert lease["id"] in shown.stdout and "granted" in shown.stdout
    released = run("lease", "release", lease["id"])
    assert released.returncode == 0 and "released" in released.stdout
    gone = run("lease", "renew", lease["id"])
    assert gone.returncode == 1 and "ask for a new one" in gone.stderr
    bad = run("lease", "request", "--strategy", "best")
    assert bad.returncode == 1 and "strategy must be one of" in bad.stderr

    # a queue over several providers, from the CLI
    other = run(
        "providers",
        "add",
        "lab2",
        "--launcher",
        "SSH",
        "--dispatch",
        "daemon",
        "--kwarg",
        "host=box-2",
    )
    assert other.returncode == 0, other.stderr
    made = run("queues", "add", "mixed", "--providers", "lab,lab2", "--strategy", "cheapest")
    assert made.returncode == 0, made.stderr
    assert "mixed  providers lab,lab2 (cheapest)" in made.stdout
    wrong = run("queues", "update", "mixed", "--strategy", "fastest")
    assert wrong.returncode == 1 and "strategy must be one of" in wrong.stderr
