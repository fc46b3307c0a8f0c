"""The launchers' pure parts: what each would send, without any API."""

from __future__ import annotations

from typing import Any

import pytest
from dreamlake.controlplane.launchers import bootstrap, ec2, slurm
from dreamlake.controlplane.launchers.errors import LaunchRejected
from dreamlake.controlplane.launchers.labels import label_value, labels
from dreamlake.controlplane.launchers.order import Bootstrap, LaunchOrder


def order(**over: Any) -> LaunchOrder:
    base: dict[str, Any] = {
        "provider": "aws-us-east",
        "namespace": "team-a",
        "launcher": "EC2",
        "dispatch": "daemon",
        "kwargs": {"region": "us-east-1", "image_id": "ami-1", "security_group": ["sg-a", "sg-b"]},
        "tags": {
            "lakeshore": "true",
            "lakeshore-namespace": "team-a",
            "lakeshore-provider": "aws-us-east",
        },
        "run": {"tags": {"Team": "ML Ops"}},
        "count": 2,
        "client_token": "Req-42",
        "queue": "gpu",
        "bootstrap": Bootstrap(
            server="https://lakeshore.example:7878",
            daemon_sha256="a" * 64,
            tokens=("lks_first", "lks_second"),
            queues=("gpu",),
        ),
    }
    base.update(over)
    return LaunchOrder(**base)


def test_run_params_per_instance() -> None:
    first, second = ec2.run_params(order(), 0), ec2.run_params(order(), 1)
    assert first["ClientToken"] == "Req-42-0" and second["ClientToken"] == "Req-42-1"
    assert first["SecurityGroupIds"] == ["sg-a", "sg-b"] and first["MinCount"] == 1
    tags = {t["Key"]: t["Value"] for t in first["TagSpecifications"][0]["Tags"]}
    assert tags == {
        "lakeshore": "true",
        "lakeshore-namespace": "team-a",
        "lakeshore-provider": "aws-us-east",
        "lakeshore-client-token": "Req-42",
        "lakeshore-queue": "gpu",
        "Team": "ML Ops",
    }
    assert "lks_first" in first["UserData"] and "lks_second" not in first["UserData"]
    assert "lks_second" in second["UserData"]
    direct = ec2.run_params(order(dispatch="direct", bootstrap=None), 0)
    assert "UserData" not in direct
    with pytest.raises(LaunchRejected, match=r"image_id \(or ami\)"):
        ec2.run_params(order(kwargs={"region": "us-east-1"}), 0)
    # `ami`, as the ec2 template's decision and docs/pulumi.md name it, is the image too
    named = ec2.run_params(order(kwargs={"region": "us-east-1", "ami": "ami-2"}), 0)
    assert named["ImageId"] == "ami-2"
    both = order(kwargs={"region": "us-east-1", "image_id": "ami-1", "ami": "ami-2"})
    assert ec2.run_params(both, 0)["ImageId"] == "ami-1"
    # the server's own credentials, as its operator may allow: only the image is judged
    ec2.validate(order(kwargs={"region": "us-east-1", "ami": "ami-2"}, server_credentials=True))


def test_user_data_stays_small_and_fetches_by_hash() -> None:
    long = order(provider="p" * 63, namespace="n" * 63, kwargs={"region": "r", "image_id": "i"})
    script = bootstrap.script(long, 0)
    assert len(script.encode()) < bootstrap.USER_DATA_LIMIT // 4
    assert f"/api/namespaces/{'n' * 63}/daemon/{'a' * 64}" in script
    assert "sha256sum -c -" in script and "--no-index --no-deps" in script
    assert script.startswith("#!/bin/sh\n")
    assert "python3 -m venv" in script  # a wheels bundle goes into a venv
    zipapp = order(
        bootstrap=Bootstrap(
            server="http://cp:7878", daemon_sha256="b" * 64, tokens=("lks_z",), daemon_kind="pyz"
        )
    )
    pyz = bootstrap.script(zipapp, 0)
    assert "venv" not in pyz and 'exec python3 -I "$D/daemon-$SHA" --server http://cp:7878' in pyz
    in_pod = bootstrap.script(order(), 1, instance_id="pod-1", token_env="TOK", foreground=True)
    assert "lks_second" not in in_pod and 'printf "%s" "$TOK" > token' in in_pod
    assert in_pod.rstrip().endswith('exec "$D/run.sh"')


def test_labels_fit_gce_and_kubernetes() -> None:
    got = labels(order())
    assert got["team"] == "ml-ops" and got["lakeshore-client-token"] == "req-42"
    assert label_value("X" * 80) == "x" * 63


def test_slurm_job_script() -> None:
    o = order(
        launcher="SLURM",
        dispatch="direct",
        bootstrap=None,
        kwargs={"host": "login", "partition": "gpu", "account": "proj", "time": "01:00:00"},
        run={"command": "srun python train.py"},
    )
    script = slurm.job_script(o, 0)
    assert script.splitlines()[:6] == [
        "#!/bin/sh",
        "#SBATCH --job-name=lakeshore-aws-us-east-req42-0",
        "#SBATCH --output=%x-%j.out",
        "#SBATCH --partition=gpu",
        "#SBATCH --account=proj",
        "#SBATCH --time=01:00:00",
    ]
    assert script.endswith("srun python train.py\n")
    daemon = slurm.job_script(order(launcher="SLURM", kwargs={"host": "login"}), 0)
    head = daemon.splitlines()
    assert head[0] == "#!/bin/sh" and head[1].startswith("#SBATCH") and "#!/bin/sh" not in head[1:5]
    assert 'exec "$D/run.sh"' in daemon
    assert "LAKESHORE_NYMPH_DIR:-$HOME/.lakeshore/nymph/aws-us-east" in daemon
    with pytest.raises(LaunchRejected, match="command"):
        slurm.job_script(order(launcher="SLURM", dispatch="direct", bootstrap=None), 0)


def test_slurm_start_within_is_a_number_of_seconds() -> None:
    slurm.validate(order(launcher="SLURM", kwargs={"host": "login", "start_within": 30}))
    for bad in ("soon", -1, True):
        with pytest.raises(LaunchRejected, match="start_within"):
            slurm.validate(order(launcher="SLURM", kwargs={"host": "login", "start_within": bad}))


def _pool(**over: Any) -> LaunchOrder:
    base: dict[str, Any] = {
        "launcher": "SSH",
        "dispatch": "direct",
        "kwargs": {"hosts": ["a:22", "b:22", "c:22"], "user": "u", "instances_per_host": 2},
        "run": {"command": "true"},
        "bootstrap": None,
    }
    base.update(over)
    return order(**base)


def test_a_pool_spreads_its_instances_least_loaded_first() -> None:
    from dreamlake.controlplane.launchers import ssh

    assert ssh.placement(_pool(count=3)) == ["a:22", "b:22", "c:22"]
    assert ssh.placement(_pool(count=6)) == ["a:22", "b:22", "c:22"] * 2
    assert ssh.placement(_pool(count=7)) == ["a:22", "b:22", "c:22"] * 2  # room for 6
    busy = ("u@a/run-1", "u@a/run-2", "u@b/run-3")  # labels leave out port 22
    assert ssh.placement(_pool(count=3, busy=busy)) == ["c:22", "b:22", "c:22"]
    with pytest.raises(LaunchRejected, match="room for 3"):
        ssh.validate(_pool(count=4, busy=busy))
    # a host runs one daemon of a provider, whatever the setting
    daemons = _pool(dispatch="daemon", count=3, busy=("u@b",))
    assert ssh.placement(daemons) == ["a:22", "c:22"]
    with pytest.raises(LaunchRejected, match="runs a command"):
        ssh.validate(_pool(run={}))


def test_a_direct_ssh_run_starts_detached_once() -> None:
    from dreamlake.controlplane.launchers import ssh

    script = ssh.direct_script(_pool(count=1, run={"command": "echo 'hi' $HOME"}), 0)
    assert "echo 'hi' $HOME\nLAKESHORE_COMMAND" in script  # the command verbatim
    assert "if [ -f pid ]; then exit 0; fi" in script  # a retry starts nothing twice
    assert "setsid nohup" in script and "echo $! > pid" in script


def test_the_daemon_starts_on_every_boot() -> None:
    script = bootstrap.script(order(), 0)
    assert "WantedBy=multi-user.target" in script and "systemctl enable lakeshore-nymph" in script
    assert "RestartPreventExitStatus=75" in script  # a suspend is not restarted
    assert "systemctl start lakeshore-nymph.service" in script  # never a restart
    assert "/var/lib/cloud/scripts/per-boot" in script and "LAKESHORE_PER_BOOT_DIR" in script
    assert '--pid-file "$D/nymph.pid"' in script
    assert 'if [ ! -f "installed-$SHA" ]' in bootstrap.script(order(), 0)
    assert len(script.encode()) < bootstrap.USER_DATA_LIMIT
