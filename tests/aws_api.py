"""An AWS API implementation on 127.0.0.1 for the tests that need one: moto's server
in its own process on a free port, with dummy credentials for the clients.

Each region moto serves is built on its first request, images included: by default
moto's base list (44 images, Amazon Linux and Deep Learning ones among them) plus
some 1,250 regional ECS and "latest" images, each with a snapshot and a volume,
which costs about half a second of CPU per region. ``base_images`` points moto at
the base list alone (``MOTO_AMIS_PATH``): every image these tests launch or a probe
looks for is in it, and a region is built in a few milliseconds.
"""

from __future__ import annotations

import gzip
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

MOTO_SERVER = Path(sys.executable).parent / "moto_server"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def base_images(folder: Path) -> dict[str, str]:
    """The environment that has moto serve its base image list only, in every region
    (the list written to ``folder``; see the module's docstring)."""
    import moto

    listed = Path(moto.__file__).parent / "ec2" / "resources" / "amis.json.gz"
    path = folder / "moto-amis.json"
    if not path.exists():
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_bytes(gzip.decompress(listed.read_bytes()))
        tmp.replace(path)
    return {"MOTO_AMIS_PATH": str(path)}


def start_moto(log: Path, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """``moto_server`` on 127.0.0.1, answering, serving the base images
    (``base_images``) unless ``env`` says otherwise; its output goes to ``log``."""
    env = {**base_images(log.parent), **(env or {})}
    port = free_port()
    with log.open("wb") as fh:
        proc = subprocess.Popen(
            [str(MOTO_SERVER), "-H", "127.0.0.1", "-p", str(port)],
            stdout=fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **env},
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"{url}/moto-api/", timeout=1).close()
            return proc, url
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"moto_server did not start: {log.read_text()}") from None
            time.sleep(0.2)


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def moto_server(log: Path) -> Iterator[str]:
    """The server's URL while the block runs; stopped after it."""
    proc, url = start_moto(log)
    try:
        yield url
    finally:
        stop(proc)


def ec2(url: str, region: str = "us-east-1") -> Any:
    """An EC2 client of that API (dummy credentials)."""
    import boto3

    return boto3.client(
        "ec2",
        region_name=region,
        endpoint_url=url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
