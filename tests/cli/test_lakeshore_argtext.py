"""Every `lakeshore` command, given an argument made of bytes that are not UTF-8 (what
a Latin-1 shell types for `é`), says which argument and exits 1: no traceback. The
commands come from the app's own command tree; each runs as a real process, its
argv carrying the raw bytes: forked from a server with the imports done
(``tests/cli_fork.py``), and started from scratch for the namespace variable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_fork import run_module

LAKESHORE = [sys.executable, "-m", "dreamlake.cli.lakeshore.app"]
BAD = os.fsdecode(b"h\xe9")  # surrogateescape'd: the child's argv gets the raw bytes


def _commands() -> Iterator[tuple[list[str], Any]]:
    import typer.main
    from dreamlake.cli.lakeshore.app import app

    def walk(cmd: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
        if hasattr(cmd, "commands"):
            for name, sub in sorted(cmd.commands.items()):
                yield from walk(sub, [*path, name])
        else:
            yield path, cmd

    yield from walk(typer.main.get_command(app), [])


def _value_options(cmd: Any) -> list[str]:
    return [
        p.opts[0]
        for p in cmd.params
        if p.param_type_name == "option"
        and not p.is_flag
        and not p.opts[0].endswith(("-file", "-dir"))
        and p.opts[0] not in ("--write", "--help")
    ]


def _cases() -> list[tuple[str, list[str]]]:
    """(id, argv) for every command: every positional argument not UTF-8; with
    ``--namespace``, the namespace not UTF-8; else the first option that takes a
    value. Required options get a plain value."""
    cases = []
    for path, cmd in _commands():
        args = [p for p in cmd.params if p.param_type_name == "argument"]
        required = [
            p.opts[0]
            for p in cmd.params
            if p.param_type_name == "option" and p.required and not p.is_flag
        ]
        plain = [x for opt in required for x in (opt, "x")]
        name = " ".join(path)
        if args:
            cases.append((f"{name} ARG", [*path, *[BAD] * len(args), *plain]))
        has_ns = any("--namespace" in p.opts for p in cmd.params if p.param_type_name == "option")
        if has_ns:
            cases.append((f"{name} -N", [*path, *["x"] * len(args), "-N", BAD, *plain]))
        if not args and not has_ns:
            option = _value_options(cmd)[0]
            cases.append((f"{name} {option}", [*path, option, BAD, *plain]))
    return cases


CASES = _cases()


def _run(argv: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    p = run_module(
        LAKESHORE[-1],
        argv,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        timeout=120,
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(cwd),
            "LAKESHORE_URL": "http://127.0.0.1:9",
            **env,
        },
    )
    out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def test_every_command_is_covered() -> None:
    names = {case_id.rsplit(" ", 1)[0] for case_id, _ in CASES}
    # the commands a traceback was seen from, among all the others
    for seen in (
        "providers show",
        "providers remove",
        "providers restore",
        "providers hide",
        "providers test",
        "secrets remove",
        "modes show",
        "modes remove",
        "claims",
        "queues status",
        "queues remove",
        "lease show",
        "tokens create",
        "providers list",
    ):
        assert seen in names, seen
    assert len(names) > 40


@pytest.mark.parametrize(("argv"), [argv for _, argv in CASES], ids=[i for i, _ in CASES])
def test_an_argument_that_is_not_utf8_is_a_clean_error(argv: list[str], tmp_path: Path) -> None:
    out = _run(argv, tmp_path)
    assert "Traceback" not in out.stderr, out.stderr
    assert out.returncode == 1, (out.returncode, out.stderr)
    assert out.stderr.startswith("error: ") and "is not UTF-8 text" in out.stderr, out.stderr
    assert "h\\xe9" in out.stderr  # the argument, shown as its bytes
    doc = json.loads(_run([*argv, "--json"], tmp_path).stdout)
    assert doc["kind"] == "usage" and "is not UTF-8 text" in doc["error"]


def test_a_path_that_is_not_utf8_is_opened_not_refused(tmp_path: Path) -> None:
    """A file name may be any bytes: it is opened (here: it does not exist), never sent."""
    out = _run(["providers", "add", "p", "--launcher", "SSH", "--kwargs-file", BAD], tmp_path)
    assert "Traceback" not in out.stderr and out.returncode == 1, out.stderr
    assert "is not UTF-8 text" not in out.stderr


def test_a_namespace_variable_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    out = subprocess.run(
        [*LAKESHORE, "providers", "list"],
        cwd=tmp_path,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LAKESHORE_NAMESPACE": BAD},
    )
    err = out.stderr.decode("utf-8", "replace")
    assert out.returncode == 1 and "Traceback" not in err, err
    assert "LAKESHORE_NAMESPACE" in err and "is not UTF-8 text" in err
