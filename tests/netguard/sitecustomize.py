"""A network guard for the tests' own subprocesses (put on ``PYTHONPATH`` with
``DREAMLAKE_TEST_NETLOG`` naming a log file): every TCP connection a Python process
opens and every ``ssh`` it spawns is written to the log, one JSON line each, and
refused unless it goes to a loopback address (127.0.0.0/8, ::1, localhost).

Audit hooks (``sys.addaudithook``) see ``socket.connect`` for every socket the
process connects, paramiko's and urllib's included, and ``subprocess.Popen`` for
every command it runs, the OpenSSH client included. A refused connect raises
``PermissionError`` in the process, so a test run that tried one fails loudly,
and the log says where it tried to go.
"""

from __future__ import annotations

import json
import os
import re
import sys

_LOG = os.environ.get("DREAMLAKE_TEST_NETLOG")
_IPV4 = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d{1,3}){3})(?![\d.])")


def _loopback(host: str) -> bool:
    h = host.strip("[]").lower()
    return h in ("localhost", "::1", "0:0:0:0:0:0:0:1") or h.startswith(("127.", "::ffff:127."))


def _write(entry: dict[str, object]) -> None:
    assert _LOG is not None
    entry["pid"] = os.getpid()
    with open(_LOG, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry) + "\n")


def _hook(event: str, args: tuple[object, ...]) -> None:
    if event == "socket.connect":
        addr = args[1] if len(args) > 1 else None
        if isinstance(addr, tuple) and addr and isinstance(addr[0], str):
            ok = _loopback(addr[0])
            _write({"event": "connect", "host": addr[0], "port": addr[1], "allowed": ok})
            if not ok:
                raise PermissionError(f"test network guard: {addr[0]} is not a loopback address")
    elif event == "subprocess.Popen":
        argv = args[1] if len(args) > 1 else None
        words = [str(a) for a in argv] if isinstance(argv, (list, tuple)) else [str(argv)]
        if words and os.path.basename(words[0]) == "ssh":
            hosts = [h for w in words for h in _IPV4.findall(w)]
            ok = all(_loopback(h) for h in hosts)
            _write({"event": "ssh", "argv": words[:-1], "hosts": hosts, "allowed": ok})
            if not ok:
                raise PermissionError(f"test network guard: ssh to {hosts} is not loopback")


if _LOG:
    sys.addaudithook(_hook)
