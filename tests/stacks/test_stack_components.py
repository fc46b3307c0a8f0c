"""Every vendor's program under the Pulumi SDK's own mocks (``set_mocks``): the
resources it declares, their key properties and parents (every resource a child
of the vendor's component), and the outputs, mirroring the terraform templates.
Each run is a child process (``mock_stack.py``); the cloud APIs are a NAMED test
double there. A vendor whose provider SDK is not installed is skipped, saying so.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib import import_module
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import hcl2
import pytest
from dreamlake.engine.world.vendors import get_template
from dreamlake.stacks import VENDORS

HERE = Path(__file__).parent
SDKS = {
    "local": (),
    "ec2": ("pulumi_aws",),
    "gce": ("pulumi_gcp",),
    "kube": ("pulumi_aws", "pulumi_kubernetes"),
}
CONFIGS: dict[str, dict[str, Any]] = {
    "local": {
        "workdir": "/var/lib/nymph/",
        "queues": ["gpu", "gpu", "cpu"],
        "worker_name": "lab-box",
    },
    "ec2": {
        "region": "us-east-1",
        "subnet": "subnet-0123456789abcdef0",
        "instance_type": "g5.xlarge",
        "ami": "ami-0123456789abcdef0",
        "worker_count": 2,
        "root_volume_gb": 200,
        "ssh_ingress_cidrs": ["203.0.113.0/24"],
        "tags": {"team": "ml"},
    },
    "gce": {
        "project": "my-gpu-project",
        "zone": "us-central1-a",
        "gpu_type": "nvidia-l4",
        "disk_gb": 150,
        "labels": {"team": "ml"},
    },
    "kube": {
        "region": "us-east-1",
        "cluster_name": "gpu-lab",
        "vpc": "10.42.0.0/16",
        "node_type": ["g5.xlarge", "g6.xlarge"],
        "node_min": 1,
        "node_desired": 2,
        "node_max": 3,
        "az_count": 3,
    },
}


KUBE_ARGS: dict[str, Any] = {
    "cluster_name": "gpu",
    "vpc": "10.42.0.0/16",
    "node_type": ["g5.xlarge"],
}
"""GpuCluster's args for the clashes test (two regions of one stack; two stacks
without a cluster_name, which the scenario drops)."""


def needs_sdk(vendor: str) -> None:
    missing = [m for m in SDKS[vendor] if find_spec(m) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (the dev extra) to run the {vendor} program")


SCENARIOS: list[tuple[str, dict[str, Any], str]] = [
    *[(v, CONFIGS[v], "program") for v in VENDORS],
    *[(v, CONFIGS[v], "embed") for v in VENDORS],
    ("ec2", {**CONFIGS["ec2"], "target_status": "suspended"}, "program"),
    ("gce", {**CONFIGS["gce"], "target_status": "suspended"}, "program"),
    ("kube", {**CONFIGS["kube"], "vpc": "vpc-0abc1234"}, "program"),
    ("kube", {**CONFIGS["kube"], "vpc": "vpc-0def5678"}, "program"),
    ("ec2", {**CONFIGS["ec2"], "worker_count": "3"}, "main"),
    ("local", {"workdir": "/srv", "queues": "not-json", "worker_name": "box"}, "main"),
    *[("kube", KUBE_ARGS, mode) for mode in ("regions", "stack:dev", "stack:prod")],
]


def _key(vendor: str, config: dict[str, Any], mode: str) -> str:
    return json.dumps([vendor, config, mode], sort_keys=True)


# The vendors whose programs run in one child process: those sharing a provider SDK
# import it once (every scenario still gets fresh mocks); the two children run side
# by side.
PROCESSES = (("ec2", "kube"), ("local", "gce"))


@pytest.fixture(scope="module")
def mocked() -> dict[str, dict[str, Any]]:
    """Every scenario's result: two child processes (``PROCESSES``), run side by side."""
    assert sorted(v for group in PROCESSES for v in group) == sorted(VENDORS)
    procs = {}
    for group in PROCESSES:
        vendors = [v for v in group if all(find_spec(m) is not None for m in SDKS[v])]
        batch = [s for s in SCENARIOS if s[0] in vendors]
        if not batch:
            continue
        vendor = "+".join(vendors)
        procs[vendor] = (
            batch,
            subprocess.Popen(
                [sys.executable, str(HERE / "mock_stack.py"), json.dumps(batch)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            ),
        )
    out: dict[str, dict[str, Any]] = {}
    for vendor, (batch, proc) in procs.items():
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"{vendor}: {stderr[-2000:]}"
        for scenario, result in zip(
            batch, json.loads(stdout.strip().splitlines()[-1]), strict=True
        ):
            out[_key(*scenario)] = result
    return out


@pytest.fixture
def run(mocked: dict[str, dict[str, Any]]) -> Any:
    def get(vendor: str, config: dict[str, Any], mode: str = "program") -> dict[str, Any]:
        needs_sdk(vendor)
        return mocked[_key(vendor, config, mode)]

    return get


def custom(res: dict[str, Any], typ: str) -> list[dict[str, Any]]:
    """The registrations of type ``typ``, by name (registration order is concurrent)."""
    return sorted((r for r in res["resources"] if r["type"] == typ), key=lambda r: r["name"])


def terraform_outputs(vendor: str) -> set[str]:
    text = get_template(vendor).root.joinpath("terraform", "outputs.tf").read_text()
    return {name.strip('"') for block in hcl2.loads(text)["output"] for name in block}


def assert_parented(res: dict[str, Any], component_type: str) -> None:
    """Every resource but the root stack is the component or its child."""
    comps = [r for r in res["resources"] if r["type"] == component_type]
    assert len(comps) == 1, comps
    comp = comps[0]
    assert not comp["custom"]
    for r in res["resources"]:
        if r["type"] in ("pulumi:pulumi:Stack", component_type):
            continue
        assert r["parent"] == comp["urn"], r
        assert f"{component_type}$" in r["urn"], r


@pytest.mark.parametrize("vendor", VENDORS)
def test_both_backends_expose_the_same_output_names(vendor: str) -> None:
    """The component's outputs (``OUTPUTS``) are the terraform template's outputs;
    the mock run below checks the program exports exactly those."""
    assert set(import_module(f"dreamlake.stacks.{vendor}").OUTPUTS) == terraform_outputs(vendor)


@pytest.mark.parametrize("vendor", VENDORS)
def test_program_exports_the_terraform_outputs(run: Any, vendor: str) -> None:
    res = run(vendor, CONFIGS[vendor])
    assert res["error"] is None, res["error"]
    assert set(res["outputs"]) == terraform_outputs(vendor)


def test_local_component_outputs_only(run: Any) -> None:
    res = run("local", CONFIGS["local"])
    assert res["error"] is None
    assert [r["type"] for r in res["resources"]] == [
        "pulumi:pulumi:Stack",
        "dreamlake:local:LocalWorker",
    ]
    assert_parented(res, "dreamlake:local:LocalWorker")
    assert res["outputs"] == {
        "worker_host": "localhost",
        "worker_name": "lab-box",
        "workdir": "/var/lib/nymph",
        "queues": ["gpu", "cpu"],
        # the daemon claims the component's provider (its name unless given)
        "daemon_args": [
            "nymph",
            "--provider",
            "dreamlake",
            "--instance-id",
            "lab-box",
            "--workdir",
            "/var/lib/nymph",
            "--queues",
            "gpu,cpu",
        ],
    }


def test_ec2_resources_and_outputs(run: Any) -> None:
    res = run("ec2", CONFIGS["ec2"])
    assert res["error"] is None, res["error"]
    assert_parented(res, "dreamlake:ec2:GpuWorkers")
    [provider] = custom(res, "pulumi:providers:aws")
    assert provider["inputs"]["region"] == "us-east-1"
    tags = provider["inputs"]["defaultTags"]  # provider inputs travel as JSON text
    # every resource tagged as the terraform template's default_tags tag them
    assert (json.loads(tags) if isinstance(tags, str) else tags) == {
        "tags": {"team": "ml", "dreamlake": "true", "dreamlake-provider": "dreamlake"}
    }
    [group] = custom(res, "aws:ec2/securityGroup:SecurityGroup")
    sg = group["inputs"]
    # no fixed physical name: auto-named from the component's own name
    assert "name" not in sg and group["state"]["name"].startswith("dreamlake-worker-")
    assert sg["vpcId"] == "vpc-0abc1234"
    assert [
        (r["fromPort"], r["toPort"], r["protocol"], r["cidrBlocks"]) for r in sg["ingress"]
    ] == [(22, 22, "tcp", ["203.0.113.0/24"])]
    assert [(r["protocol"], r["cidrBlocks"]) for r in sg["egress"]] == [("-1", ["0.0.0.0/0"])]
    instances = custom(res, "aws:ec2/instance:Instance")
    assert [i["name"] for i in instances] == ["dreamlake-worker-0", "dreamlake-worker-1"]
    for n, inst in enumerate(instances):
        spec = inst["inputs"]
        assert spec["instanceType"] == "g5.xlarge" and spec["ami"] == "ami-0123456789abcdef0"
        assert spec["subnetId"] == "subnet-0123456789abcdef0"
        assert spec["metadataOptions"] == {"httpTokens": "required"}  # IMDSv2
        assert spec["rootBlockDevice"] == {"volumeSize": 200, "volumeType": "gp3"}
        assert spec["tags"] == {
            "team": "ml",
            "dreamlake": "true",
            "dreamlake-provider": "dreamlake",
            "Name": f"dreamlake-worker-{n}",
        }
        assert spec["associatePublicIpAddress"] is True
        assert spec["vpcSecurityGroupIds"] == ["dreamlake-worker-id"]  # the group's id
        assert inst["provider"].endswith("::" + "dreamlake-aws-id")  # the component's own
    states = custom(res, "aws:ec2transitgateway/instanceState:InstanceState")
    assert [s["inputs"]["state"] for s in states] == ["running", "running"]
    out = res["outputs"]
    assert out["worker_host"] == out["worker_hosts"][0] and out["worker_host"].startswith(
        "203.0.113."
    )
    assert len(out["worker_hosts"]) == 2 and out["vpc_id"] == "vpc-0abc1234"
    assert out["instance_ids"] == ["dreamlake-worker-0-id", "dreamlake-worker-1-id"]
    assert out["worker_user"] == "ubuntu" and out["region"] == "us-east-1"


def test_ec2_suspended_declares_the_stopped_instance_state(run: Any) -> None:
    res = run("ec2", {**CONFIGS["ec2"], "target_status": "suspended"})
    assert res["error"] is None, res["error"]
    states = custom(res, "aws:ec2transitgateway/instanceState:InstanceState")
    assert [s["inputs"]["state"] for s in states] == ["stopped", "stopped"]
    assert sorted(s["inputs"]["instanceId"] for s in states) == [
        "dreamlake-worker-0-id",
        "dreamlake-worker-1-id",
    ]
    assert len(custom(res, "aws:ec2/instance:Instance")) == 2  # the instances (and disks) stay


def test_gce_resources_and_outputs(run: Any) -> None:
    res = run("gce", CONFIGS["gce"])
    assert res["error"] is None, res["error"]
    assert_parented(res, "dreamlake:gce:GpuVm")
    [vm] = custom(res, "gcp:compute/instance:Instance")
    spec = vm["inputs"]
    assert spec["machineType"] == "n1-standard-8" and spec["zone"] == "us-central1-a"
    assert spec["labels"] == {
        "team": "ml",
        "dreamlake": "true",
        "dreamlake-provider": "dreamlake-worker",
    }
    assert spec["bootDisk"]["initializeParams"]["size"] == 150
    assert spec["bootDisk"]["initializeParams"]["type"] == "pd-balanced"
    assert spec["guestAccelerators"] == [{"type": "nvidia-l4", "count": 1}]
    assert spec["scheduling"]["onHostMaintenance"] == "TERMINATE"
    assert spec["metadata"] == {"install-nvidia-driver": "True"}
    assert spec["desiredStatus"] == "RUNNING"
    out = res["outputs"]
    assert out["worker_host"].startswith("203.0.113.") and out["internal_ip"].startswith(
        "10.128.0."
    )
    assert out["instance_id"].startswith("42") and out["zone"] == "us-central1-a"
    assert out["instance_name"] == "dreamlake-worker"  # the name setting, as in terraform

    stopped = run("gce", {**CONFIGS["gce"], "target_status": "suspended"})
    [vm] = custom(stopped, "gcp:compute/instance:Instance")
    assert vm["inputs"]["desiredStatus"] == "TERMINATED"


def test_kube_resources_and_outputs(run: Any) -> None:
    res = run("kube", CONFIGS["kube"])
    assert res["error"] is None, res["error"]
    assert_parented(res, "dreamlake:kube:GpuCluster")
    [vpc] = custom(res, "aws:ec2/vpc:Vpc")
    assert vpc["inputs"]["cidrBlock"] == "10.42.0.0/16"
    subnets = custom(res, "aws:ec2/subnet:Subnet")
    assert [s["inputs"]["availabilityZone"] for s in subnets] == [
        "us-east-1a",
        "us-east-1b",
        "us-east-1c",
    ]
    assert subnets[0]["inputs"]["tags"]["kubernetes.io/cluster/gpu-lab"] == "shared"
    assert len(custom(res, "aws:ec2/routeTableAssociation:RouteTableAssociation")) == 3
    roles = custom(res, "aws:iam/role:Role")  # account-wide names: auto-named
    assert [r["name"] for r in roles] == ["dreamlake-cluster", "dreamlake-node"]
    assert not [r for r in roles if "name" in r["inputs"]]
    assert all(r["state"]["name"].startswith(r["name"] + "-") for r in roles)
    assert len(custom(res, "aws:iam/rolePolicyAttachment:RolePolicyAttachment")) == 4
    [provider] = custom(res, "pulumi:providers:aws")
    tags = provider["inputs"]["defaultTags"]  # as the terraform template's default_tags
    assert (json.loads(tags) if isinstance(tags, str) else tags) == {
        "tags": {"dreamlake": "true", "dreamlake-provider": "gpu-lab"}
    }
    [cluster] = custom(res, "aws:eks/cluster:Cluster")
    assert cluster["inputs"]["name"] == "gpu-lab" and cluster["inputs"]["version"] == "1.33"
    [group] = custom(res, "aws:eks/nodeGroup:NodeGroup")
    g = group["inputs"]
    assert g["scalingConfig"] == {"minSize": 1, "desiredSize": 2, "maxSize": 3}
    assert g["instanceTypes"] == ["g5.xlarge", "g6.xlarge"]
    assert g["amiType"] == "AL2023_x86_64_NVIDIA" and g["capacityType"] == "SPOT"
    assert g["diskSize"] == 100
    assert g["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}]
    [ns] = custom(res, "kubernetes:core/v1:Namespace")
    assert ns["inputs"]["metadata"]["name"] == "dreamlake"
    out = res["outputs"]
    assert re.fullmatch(r"ABC[0-9]+\.gr7\.us-east-1\.eks\.amazonaws\.com", out["worker_host"])
    assert out["region"] == "us-east-1" and out["node_group"] == "gpu-lab-gpu"
    assert out["cluster_name"] == "gpu-lab" and out["cluster_ca_data"] == "Q0EtREFUQQ=="


def test_kube_adopting_a_vpc_makes_no_network_and_uses_its_subnets(run: Any) -> None:
    """``vpc = "vpc-…"``: like the terraform template's adopt branch, no VPC, gateway,
    route table or subnet is declared; the cluster and the node group go into the
    subnets looked up by that VPC's id, and ``vpc_id`` is the adopted one."""
    res = run("kube", {**CONFIGS["kube"], "vpc": "vpc-0abc1234"})
    assert res["error"] is None, res["error"]
    assert_parented(res, "dreamlake:kube:GpuCluster")
    made = {r["type"] for r in res["resources"]}
    for network in (
        "aws:ec2/vpc:Vpc",
        "aws:ec2/subnet:Subnet",
        "aws:ec2/internetGateway:InternetGateway",
        "aws:ec2/routeTable:RouteTable",
        "aws:ec2/routeTableAssociation:RouteTableAssociation",
    ):
        assert network not in made, network
    adopted = ["subnet-0aaa1111", "subnet-0bbb2222"]  # mock_stack.ADOPTED_SUBNETS
    [cluster] = custom(res, "aws:eks/cluster:Cluster")
    assert cluster["inputs"]["vpcConfig"]["subnetIds"] == adopted
    [group] = custom(res, "aws:eks/nodeGroup:NodeGroup")
    assert group["inputs"]["subnetIds"] == adopted
    assert res["outputs"]["vpc_id"] == "vpc-0abc1234"
    assert set(res["outputs"]) == terraform_outputs("kube")


def test_kube_adopting_a_missing_vpc_fails_before_the_cluster(run: Any) -> None:
    """As the template's ``data "aws_vpc"`` fails the plan: the VPC is looked up
    first, so one that does not exist is an error, and no cluster is declared."""
    res = run("kube", {**CONFIGS["kube"], "vpc": "vpc-0def5678"})
    assert res["error"] is not None and "vpc-0def5678" in res["error"], res["error"]
    assert not custom(res, "aws:eks/cluster:Cluster")


@pytest.mark.parametrize("vendor", VENDORS)
def test_two_components_side_by_side(run: Any, vendor: str) -> None:
    """Embedded twice in one program: every URN distinct, each tree its own."""
    res = run(vendor, CONFIGS[vendor], "embed")
    assert res["error"] is None, res["error"]
    urns = [r["urn"] for r in res["resources"]]
    assert len(urns) == len(set(urns))
    comps = [r for r in res["resources"] if not r["custom"] and r["type"].startswith("dreamlake:")]
    assert sorted(c["name"] for c in comps) == ["a", "b"]
    by_urn = {c["urn"]: c["name"] for c in comps}
    children = [r for r in res["resources"] if r["parent"] in by_urn]
    assert children or vendor == "local"
    for r in children:
        assert r["name"].startswith(by_urn[r["parent"]] + "-"), r
    assert len(res["hosts"]) == 2


def test_main_reads_the_stack_config_with_typed_getters(run: Any) -> None:
    """``main()`` (the scaffolded file's entry) reads ints and lists with Pulumi's
    typed getters: ``worker_count`` set as text is an int."""
    res = run("ec2", {**CONFIGS["ec2"], "worker_count": "3"}, "main")
    assert res["error"] is None, res["error"]
    assert len(custom(res, "aws:ec2/instance:Instance")) == 3


def test_main_reports_a_mistyped_value_by_key(run: Any) -> None:
    res = run("local", {"workdir": "/srv", "queues": "not-json", "worker_name": "box"}, "main")
    assert res["error"] is not None
    assert "dreamlake config: queues:" in res["error"]


def _physical(res: dict[str, Any]) -> tuple[list[str], list[tuple[str, str]]]:
    """The IAM role names (account-wide) and the (region, name) of each EKS cluster."""
    assert res["error"] is None, res["error"]
    roles = [r["state"]["name"] for r in custom(res, "aws:iam/role:Role")]
    regions = {p["urn"]: p["inputs"].get("region") for p in custom(res, "pulumi:providers:aws")}
    clusters = [
        (regions.get(c["provider"].rsplit("::", 1)[0]) or "", c["state"]["name"])
        for c in custom(res, "aws:eks/cluster:Cluster")
    ]
    return roles, clusters


def test_two_clusters_in_two_regions_of_one_stack_do_not_clash(run: Any) -> None:
    """One cluster_name in two regions: the EKS clusters share it (a regional name),
    the IAM roles (account-wide names) are auto-named apart."""
    roles, clusters = _physical(run("kube", KUBE_ARGS, "regions"))
    assert len(roles) == 4 and len(set(roles)) == 4
    assert sorted(clusters) == [("eu-west-1", "gpu"), ("us-east-1", "gpu")]


def test_one_program_as_two_stacks_does_not_clash(run: Any) -> None:
    """No cluster_name: the cluster is named after the component and the stack."""
    names = {}
    for stack in ("dev", "prod"):
        roles, clusters = _physical(run("kube", KUBE_ARGS, f"stack:{stack}"))
        assert [c[1] for c in clusters] == [f"gpu-{stack}"]
        names[stack] = set(roles) | {c[1] for c in clusters}
    assert not names["dev"] & names["prod"]
