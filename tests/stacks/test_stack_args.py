"""The components' args classes: ``pulumi.Input`` values taken as given, plain values
validated as the vendor's ``Config`` validates them (the scaffolded stack's model),
before anything is declared."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest
from dreamlake.stacks import ec2, gce, kube, local


def output(value: Any) -> Any:
    """A ``pulumi.Output`` whose value is not known yet (as another resource's id)."""
    import pulumi

    loop = asyncio.new_event_loop()
    # Output() schedules on the current loop, which an earlier test may have closed
    asyncio.set_event_loop(loop)
    fut: asyncio.Future[Any] = loop.create_future()
    known: asyncio.Future[bool] = loop.create_future()
    return pulumi.Output(set(), fut, known)


EC2 = {
    "subnet": "subnet-0123456789abcdef0",
    "instance_type": "g5.xlarge",
    "ami": "ami-0123456789abcdef0",
}


def test_plain_values_are_validated_as_config_does() -> None:
    with pytest.raises(ec2.ConfigError) as ei:
        ec2.GpuWorkersArgs(**{**EC2, "subnet": "subnet-XYZ", "root_volume_gb": 10})
    lines = str(ei.value).splitlines()
    assert lines == [
        'dreamlake config: subnet: The subnet_id must be a subnet ID such as "subnet-0123456789abcdef0".',
        "dreamlake config: root_volume_gb: The root_volume_gb must be between 30 and 16384.",
    ]
    assert isinstance(ei.value, ValueError)


def test_outputs_are_taken_as_given() -> None:
    subnet, cidr = output("subnet-x"), output("10.0.0.0/16")
    args = ec2.GpuWorkersArgs(**{**EC2, "subnet": subnet, "ssh_ingress_cidrs": [cidr]})
    assert args.subnet is subnet and args.ssh_ingress_cidrs == [cidr]
    assert args.region is None  # the stack's default provider
    assert args.worker_count == 1 and args.tags == {}


def test_plain_values_are_coerced_as_config_coerces_them() -> None:
    args = ec2.GpuWorkersArgs(**EC2, worker_count=3.0, region="eu-west-1")  # type: ignore[arg-type]
    assert args.worker_count == 3 and type(args.worker_count) is int


def test_a_count_must_be_plain() -> None:
    with pytest.raises(TypeError, match="worker_count must be a plain number"):
        ec2.GpuWorkersArgs(**EC2, worker_count=output(2))
    with pytest.raises(TypeError, match="az_count must be a plain number"):
        kube.GpuClusterArgs(vpc="10.42.0.0/16", node_type=["g5.xlarge"], az_count=output(2))


def test_a_cross_field_rule_is_checked_only_when_all_its_keys_are_plain() -> None:
    base = {"vpc": "10.42.0.0/16", "node_type": ["g5.xlarge"]}
    with pytest.raises(kube.ConfigError) as ei:
        kube.GpuClusterArgs(**base, node_min=3, node_desired=1, node_max=4)
    assert "dreamlake config: node_min: node_min <= node_desired <= node_max must hold" in str(
        ei.value
    )
    kube.GpuClusterArgs(**base, node_min=3, node_desired=output(5), node_max=8)  # not known yet


def test_kube_network_is_one_of_vpc_or_vpc_id() -> None:
    with pytest.raises(kube.ConfigError, match="either vpc"):
        kube.GpuClusterArgs(node_type=["g5.xlarge"])
    with pytest.raises(kube.ConfigError, match="either vpc"):
        kube.GpuClusterArgs(vpc="10.42.0.0/16", vpc_id=output("vpc-1"), node_type=["g5.xlarge"])
    with pytest.raises(TypeError, match="pass an existing VPC's id that is an Output as vpc_id"):
        kube.GpuClusterArgs(vpc=output("vpc-1"), node_type=["g5.xlarge"])  # type: ignore[arg-type]
    with pytest.raises(kube.ConfigError, match="subnet_ids goes with an existing VPC"):
        kube.GpuClusterArgs(vpc="10.42.0.0/16", subnet_ids=["subnet-1"], node_type=["g5.xlarge"])
    with pytest.raises(kube.ConfigError, match="dreamlake config: vpc: The vpc must be"):
        kube.GpuClusterArgs(vpc="10.42.0.0/8", node_type=["g5.xlarge"])
    args = kube.GpuClusterArgs(vpc_id=output("vpc-1"), node_type=["g5.xlarge"])
    assert args.cluster_name is None and args.region is None


def test_gce_and_local_args() -> None:
    with pytest.raises(gce.ConfigError, match="accelerator_count must be 1, 2, 4 or 8"):
        gce.GpuVmArgs(gpu_type="nvidia-l4", accelerator_count=3)
    with pytest.raises(gce.ConfigError, match="accelerator_type must be one of"):
        gce.GpuVmArgs(gpu_type="nvidia-x")
    args = gce.GpuVmArgs(gpu_type="nvidia-l4", subnetwork=output("sub"))
    assert args.project is None and args.zone is None and args.name is None
    with pytest.raises(local.ConfigError, match="workdir: The workdir must be"):
        local.LocalWorkerArgs(workdir="rel", queues=["a"], worker_name="box")
    local.LocalWorkerArgs(workdir=output("/srv"), queues=[output("a")], worker_name="box")


@pytest.mark.parametrize("vendor", [ec2, gce, kube, local], ids=lambda m: m.__name__)
def test_a_config_stands_for_the_same_args(vendor: Any) -> None:
    """The scaffolded stack's Config (what the decision scan validates) is accepted
    by the component as its args, its explicit region/project kept."""
    configs = {
        "ec2": {**EC2, "region": "us-east-1"},
        "gce": {"project": "my-gpu-project", "zone": "us-central1-a", "gpu_type": "nvidia-l4"},
        "kube": {
            "region": "us-east-1",
            "cluster_name": "c",
            "vpc": "10.42.0.0/16",
            "node_type": ["g5.xlarge"],
        },
        "local": {"workdir": "/srv", "queues": ["a"], "worker_name": "box"},
    }
    name = vendor.__name__.rsplit(".", 1)[1]
    config = vendor.Config(**configs[name])
    args_class = next(v for k, v in vars(vendor).items() if k.endswith("Args"))
    args = args_class.from_config(config)
    for key, value in config.model_dump().items():
        assert getattr(args, key) == value, key


def test_args_classes_load_without_pulumi() -> None:
    code = (
        "import sys\n"
        "from dreamlake.stacks.ec2 import GpuWorkersArgs\n"
        "from dreamlake.stacks.kube import GpuClusterArgs\n"
        "GpuWorkersArgs(subnet='subnet-0123456789abcdef0', instance_type='g5.xlarge',"
        " ami='ami-0123456789abcdef0')\n"
        "GpuClusterArgs(vpc='10.42.0.0/16', node_type=['g5.xlarge'])\n"
        "assert not [m for m in sys.modules if m.startswith('pulumi')]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
