"""``providers edit`` on a real terminal: tmux drives the picker and the action menu."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from registry_harness import LAKESHORE, Server, record

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("tmux") is None, reason="needs tmux to give the editor a terminal"
    ),
]


class Pane:
    def __init__(self, socket: str, session: str) -> None:
        self.socket, self.session = socket, session

    def tmux(self, *args: str) -> str:
        out = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=30
        )
        return out.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", self.session)

    def send(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.session, *keys)

    def wait_for(self, text: str, *, after: int = 0, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if screen.count(text) > after:
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{text!r} never appeared; screen:\n{self.screen()}")


@pytest.fixture
def pane(sqlite_server: Server, tmp_path: Path) -> Iterator[tuple[Pane, str]]:
    s = sqlite_server
    ns = s.namespace()
    api = s.client()
    for name in ("alpha", "bravo", "charlie"):
        assert (
            api.post(
                f"/api/namespaces/{ns}/providers", json={"name": name, "launcher": "SSH"}
            ).status_code
            == 201
        )
    api.patch(f"/api/namespaces/{ns}/providers/bravo", json={"hidden": True})
    api.delete(f"/api/namespaces/{ns}/providers/charlie")
    script = tmp_path / "edit.sh"
    env = s.env(ns)
    exports = "".join(
        f"export {k}={shlex.quote(v)}\n"
        for k, v in env.items()
        if k.startswith(("LAKESHORE_", "PATH", "HOME"))
    )
    script.write_text(f"{exports}{shlex.quote(LAKESHORE)} providers edit\necho EXIT=$?\nsleep 60\n")
    socket = f"registry-edit-{os.getpid()}"
    p = Pane(socket, "edit")
    subprocess.run(
        [
            "tmux",
            "-L",
            socket,
            "new-session",
            "-d",
            "-s",
            "edit",
            "-x",
            "160",
            "-y",
            "50",
            f"bash {script}",
        ],
        check=True,
        timeout=30,
    )
    try:
        yield p, ns
    finally:
        record("tmux edit screen", p.screen())
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, timeout=30)


def test_edit_picker_and_actions(pane: tuple[Pane, str], sqlite_server: Server) -> None:
    p, ns = pane
    screen = p.wait_for("pick 1-")
    assert "1. [show hidden + deleted too]" in screen and "2. [quit]" in screen
    assert "3. alpha" in screen and "bravo" not in screen

    p.send("1", "Enter")  # the synthetic toggle: hidden + deleted join the list
    screen = p.wait_for("all providers")
    assert "4. bravo  [H]" in screen and "5. charlie  [D 20" in screen

    p.send("4", "Enter")  # a hidden row offers unhide and delete
    screen = p.wait_for("action 1-")
    menu = screen[screen.rindex("-- bravo") :]
    assert (
        "1. unhide" in menu and "2. delete" in menu and "hide\n" not in menu.replace("unhide", "")
    )
    p.send("1", "Enter")
    p.wait_for("unhid bravo")

    p.send("5", "Enter")  # a soft-deleted row offers restore only
    screen = p.wait_for("action 1-", after=1)
    menu = screen[screen.rindex("-- charlie") :]
    assert "1. restore" in menu and "2. back" in menu and "delete" not in menu
    p.send("1", "Enter")
    screen = p.wait_for("restored charlie")

    p.send("3", "Enter")  # an active row offers hide and delete
    screen = p.wait_for("action 1-", after=2)
    menu = screen[screen.rindex("-- alpha") :]
    assert "1. hide" in menu and "2. delete" in menu
    p.send("1", "Enter")
    screen = p.wait_for("hid alpha")
    frame = screen[screen.rindex("hid alpha") :]
    assert "3. alpha  [H]" in frame and "4. bravo  (" in frame and "5. charlie  (" in frame

    p.send("C-c")  # Ctrl-C leaves cleanly
    screen = p.wait_for("EXIT=")
    assert "EXIT=0" in screen and "Traceback" not in screen

    rows = {
        r["name"]: r
        for r in sqlite_server.client()
        .get(f"/api/namespaces/{ns}/providers", params={"all": "true"})
        .json()
    }
    assert rows["alpha"]["hidden"] is True
    assert rows["bravo"]["hidden"] is False
    assert rows["charlie"]["deletedAt"] is None


def test_edit_quit_entry(pane: tuple[Pane, str]) -> None:
    p, _ = pane
    p.wait_for("pick 1-")
    p.send("2", "Enter")
    screen = p.wait_for("EXIT=")
    assert "bye" in screen and "EXIT=0" in screen
