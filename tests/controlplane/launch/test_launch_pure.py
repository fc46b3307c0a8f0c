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
    with pytest.raises(LaunchRejected, match="image_id"):
        ec2.run_params(order(kwargs={"region": "us-east-1"}), 0)


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
