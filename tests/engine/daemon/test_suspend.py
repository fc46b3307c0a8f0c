"""What makes a suspended daemon stay down: the systemd unit does not restart (nor
count as failed) on the suspend exit status, and the daemon writes its pid where
suspend looks for it."""

from __future__ import annotations

from dreamlake.controlplane.nymph.daemon import SUSPENDED_EXIT
from dreamlake.engine.daemon import install
from dreamlake.engine.daemon.start import DaemonSpec, systemd_unit


def test_units_do_not_restart_after_a_suspend() -> None:
    spec = DaemonSpec(provider="lab", run_script="/h/run.sh", workdir="/h", log="/h/l")
    for system in (False, True):
        text = systemd_unit(spec, system=system)
        assert "Restart=always" in text
        assert f"RestartPreventExitStatus={SUSPENDED_EXIT}" in text
        assert f"SuccessExitStatus={SUSPENDED_EXIT}" in text


def test_the_daemon_writes_its_pid_beside_its_token() -> None:
    cfg = install.DaemonConfig(provider="lab", server="http://s", namespace="d", token="t")
    argv = install.nymph_argv(cfg, "/h/.dreamlake/nymph/lab/token")
    assert argv[argv.index("--pid-file") + 1] == "/h/.dreamlake/nymph/lab/nymph.pid"
