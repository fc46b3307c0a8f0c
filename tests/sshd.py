"""A real OpenSSH server on 127.0.0.1 for tests: a generated host key, a generated
client key in an AuthorizedKeysFile under a temp dir, and a log that tells how many
connections were made. Runs as root (sshd needs it); skipped with a reason otherwise.

The login user is root with ``HOME`` set to a temp folder (``SetEnv``), so nothing a
test installs lands in the real home.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if Path("/usr/sbin/sshd").exists() else None)
SFTP_SERVERS = (
    "/usr/lib/openssh/sftp-server",
    "/usr/libexec/openssh/sftp-server",
    "/usr/lib/ssh/sftp-server",
)


def skip_reason() -> str | None:
    if SSHD is None:
        return "needs an sshd binary (apt-get install -y openssh-server)"
    if shutil.which("ssh-keygen") is None:
        return "needs ssh-keygen (openssh-client)"
    if os.geteuid() != 0:
        return "needs root to run a test sshd"
    if not any(Path(p).exists() for p in SFTP_SERVERS):
        return "needs OpenSSH's sftp-server"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def keygen(path: Path) -> Path:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", path.name, "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
    )
    return path


@dataclass
class SSHServer:
    dir: Path
    port: int
    home: Path
    client_key: Path
    wrong_key: Path
    known_hosts: Path
    log: Path
    proc: subprocess.Popen[bytes]

    host: str = "127.0.0.1"
    user: str = "root"

    @property
    def spec(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"

    @property
    def host_key(self) -> str:
        """The server's public host key as text (``TYPE BASE64 COMMENT``), what
        ``ssh-keyscan`` would print for it."""
        return (self.dir / "host_ed25519.pub").read_text()

    def connections(self) -> int:
        """Connections sshd has accepted so far."""
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return 0
        return text.count("Connection from ")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


def start_sshd(base: Path, env: dict[str, str] | None = None) -> SSHServer:
    """Start sshd under ``base``; ``env`` adds variables to every session (``SetEnv``)."""
    base.mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o755)
    home = base / "home"
    home.mkdir(exist_ok=True)
    host_key = keygen(base / "host_ed25519")
    client_key = keygen(base / "client_ed25519")
    wrong_key = keygen(base / "wrong_ed25519")
    auth = base / "authorized_keys"
    auth.write_text(client_key.with_suffix(".pub").read_text())
    os.chmod(auth, 0o600)
    sftp = next(p for p in SFTP_SERVERS if Path(p).exists())
    port = free_port()
    config = base / "sshd_config"
    config.write_text(
        "\n".join(
            [
                f"Port {port}",
                "ListenAddress 127.0.0.1",
                f"HostKey {host_key}",
                f"AuthorizedKeysFile {auth}",
                f"PidFile {base / 'sshd.pid'}",
                "PermitRootLogin prohibit-password",
                "PubkeyAuthentication yes",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "UsePAM no",
                "StrictModes no",
                "LogLevel VERBOSE",
                # one SetEnv line: sshd keeps only the first SetEnv directive
                " ".join(["SetEnv", f"HOME={home}", *(f"{k}={v}" for k, v in (env or {}).items())]),
                f"Subsystem sftp {sftp}",
                "",
            ]
        )
    )
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    log = base / "sshd.log"
    fh = log.open("wb")
    proc = subprocess.Popen(
        [str(SSHD), "-D", "-e", "-f", str(config)],
        stdin=subprocess.DEVNULL,
        stdout=fh,
        stderr=subprocess.STDOUT,
    )
    fh.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"sshd exited: {log.read_text(errors='replace')}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    else:
        proc.kill()
        raise RuntimeError("sshd did not listen within 10s")
    return SSHServer(
        dir=base,
        port=port,
        home=home,
        client_key=client_key,
        wrong_key=wrong_key,
        known_hosts=base / "known_hosts",
        log=log,
        proc=proc,
    )
