"""A platform team's program (``team_program.py``) embedding two of each component in
one stack, its own network, security group and providers wired in as ``Output``s,
run under the Pulumi SDK's mocks (the cloud APIs are the TEST DOUBLE of
``mock_stack.py``): the resources each component declares, their parents, physical
names that never collide, the provider each used, and every output."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from importlib import import_module
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
STACK_CONFIG = {
    "aws:region": "us-west-2",
    "gcp:project": "team-project",
    "gcp:zone": "us-central1-b",
}
COMPONENT_TYPES = {
    "training": "dreamlake:ec2:GpuWorkers",
    "inference": "dreamlake:ec2:GpuWorkers",
    "render": "dreamlake:gce:GpuVm",
    "evaluation": "dreamlake:gce:GpuVm",
    "batch": "dreamlake:kube:GpuCluster",
    "research": "dreamlake:kube:GpuCluster",
    "lab-a": "dreamlake:local:LocalWorker",
    "lab-b": "dreamlake:local:LocalWorker",
}
VENDOR = {"GpuWorkers": "ec2", "GpuVm": "gce", "GpuCluster": "kube", "LocalWorker": "local"}

pytestmark = pytest.mark.skipif(
    any(find_spec(m) is None for m in ("pulumi_aws", "pulumi_gcp", "pulumi_kubernetes")),
    reason="needs pulumi-aws, pulumi-gcp and pulumi-kubernetes (the dev extra)",
)


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The team program and the region program (``ASKED``), run one after the other
    in one child process (each under mocks of its own): the SDKs are imported once."""
    asked = tmp_path_factory.mktemp("asked") / "__main__.py"
    asked.write_text(ASKED)
    proc = subprocess.run(
        [
            sys.executable,
            str(HERE / "run_program.py"),
            str(HERE / "team_program.py"),
            str(asked),
            json.dumps(STACK_CONFIG),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=HERE,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results: list[dict[str, Any]] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(results) == 2
    return results


@pytest.fixture(scope="module")
def stack(programs: list[dict[str, Any]]) -> dict[str, Any]:
    result = programs[0]
    assert result["error"] is None, result["error"]
    return result


def _urn(stack: dict[str, Any], name: str, typ: str) -> str:
    [r] = [r for r in stack["resources"] if r["name"] == name and r["type"] == typ]
    return str(r["urn"])


def children(stack: dict[str, Any], component: str) -> list[dict[str, Any]]:
    urn = _urn(stack, component, COMPONENT_TYPES[component])
    return sorted(
        (r for r in stack["resources"] if r["parent"] == urn), key=lambda r: (r["type"], r["name"])
    )


def of_type(rs: list[dict[str, Any]], typ: str) -> list[dict[str, Any]]:
    return [r for r in rs if r["type"] == typ]


def provider_of(stack: dict[str, Any], name: str) -> str:
    """The reference (``urn::id``) of the team's provider named ``name``."""
    [r] = [
        r
        for r in stack["resources"]
        if r["name"] == name and r["type"].startswith("pulumi:providers:")
    ]
    return f"{r['urn']}::{name}-id"


def test_every_component_is_a_child_of_the_stack_and_owns_its_resources(
    stack: dict[str, Any],
) -> None:
    root = _urn(stack, "platform-prod", "pulumi:pulumi:Stack")
    for name, typ in COMPONENT_TYPES.items():
        comp = [r for r in stack["resources"] if r["name"] == name and r["type"] == typ]
        assert len(comp) == 1 and not comp[0]["custom"] and comp[0]["parent"] == root, name
        for r in children(stack, name):
            assert f"{typ}$" in r["urn"], r
            assert r["name"].startswith(name + "-"), r  # logical names prefixed by the component
    urns = [r["urn"] for r in stack["resources"]]
    assert len(urns) == len(set(urns))
    # nothing the components declare hangs off the stack: the team's resources only
    team = {r["name"] for r in stack["resources"] if r["parent"] == root}
    assert team == {
        *COMPONENT_TYPES,
        "team", "team-a", "team-b", "team-bastion", "team-eu", "team-eu-a", "team-us",
        "eu", "gcp-eu",
    }  # fmt: skip


def test_the_resources_each_component_declares(stack: dict[str, Any]) -> None:
    kinds = {name: Counter(r["type"] for r in children(stack, name)) for name in COMPONENT_TYPES}
    assert kinds["training"] == {
        "aws:ec2/securityGroup:SecurityGroup": 1,
        "aws:ec2/instance:Instance": 2,
        "aws:ec2transitgateway/instanceState:InstanceState": 2,
    }
    assert kinds["inference"] == {
        "aws:ec2/securityGroup:SecurityGroup": 1,
        "aws:ec2/instance:Instance": 1,
        "aws:ec2transitgateway/instanceState:InstanceState": 1,
    }
    assert kinds["render"] == kinds["evaluation"] == {"gcp:compute/instance:Instance": 1}
    common = {
        "aws:iam/role:Role": 2,
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment": 4,
        "aws:eks/cluster:Cluster": 1,
        "aws:eks/nodeGroup:NodeGroup": 1,
        "pulumi:providers:kubernetes": 1,
        "kubernetes:core/v1:Namespace": 1,
    }
    assert kinds["batch"] == common  # in the team's VPC: no network of its own
    assert kinds["research"] == {
        **common,
        "aws:ec2/vpc:Vpc": 1,
        "aws:ec2/internetGateway:InternetGateway": 1,
        "aws:ec2/routeTable:RouteTable": 1,
        "aws:ec2/subnet:Subnet": 2,
        "aws:ec2/routeTableAssociation:RouteTableAssociation": 2,
    }
    assert kinds["lab-a"] == kinds["lab-b"] == {}
    # no component made a cloud provider of its own: none was asked for a region
    for name in COMPONENT_TYPES:
        assert not [t for t in kinds[name] if t in ("pulumi:providers:aws", "pulumi:providers:gcp")]


def test_physical_names_never_collide(stack: dict[str, Any]) -> None:
    def names(typ: str, prop: str = "name") -> list[str]:
        return [
            r["state"][prop] for r in stack["resources"] if r["type"] == typ and r["parent"] != ""
        ]

    groups = [
        r["state"]["name"]
        for n in ("training", "inference")
        for r in of_type(children(stack, n), "aws:ec2/securityGroup:SecurityGroup")
    ]
    assert len(groups) == len(set(groups)) == 2
    assert groups[0].startswith("training-worker-") and groups[1].startswith("inference-worker-")
    vms = [r["state"]["name"] for n in ("render", "evaluation") for r in children(stack, n)]
    assert len(set(vms)) == 2 and vms[0].startswith("render-worker-")
    assert vms[1].startswith("evaluation-worker-")
    for typ, prop in (
        ("aws:eks/cluster:Cluster", "name"),
        ("aws:iam/role:Role", "name"),
        ("aws:eks/nodeGroup:NodeGroup", "nodeGroupName"),
    ):
        found = names(typ, prop)
        assert len(found) == len(set(found)), (typ, found)
    # a cluster is named after its component and the stack; IAM roles are auto-named
    # (the logical name and a suffix), so one program as two stacks never clashes
    assert sorted(names("aws:eks/cluster:Cluster")) == ["batch-prod", "research-prod"]
    roles = sorted(names("aws:iam/role:Role"))
    for role, logical in zip(
        roles, ("batch-cluster-", "batch-node-", "research-cluster-", "research-node-"), strict=True
    ):
        assert role.startswith(logical) and len(role) > len(logical)
    # Name tags follow the component too
    tags = [
        r["inputs"]["tags"]["Name"]
        for n in ("training", "inference")
        for r in of_type(children(stack, n), "aws:ec2/instance:Instance")
    ]
    assert tags == ["training-worker-0", "training-worker-1", "inference-worker-0"]


def test_the_provider_each_component_used(stack: dict[str, Any]) -> None:
    eu, gcp_eu = provider_of(stack, "eu"), provider_of(stack, "gcp-eu")
    for name, provider in (
        ("training", ""),  # the stack's default provider (aws:region)
        ("batch", ""),
        ("render", ""),
        ("inference", eu),  # the team's, passed in opts
        ("research", eu),
        ("evaluation", gcp_eu),
    ):
        cloud = [r for r in children(stack, name) if not r["type"].startswith("kubernetes:")]
        cloud = [r for r in cloud if r["type"] != "pulumi:providers:kubernetes"]
        assert cloud and {r["provider"] for r in cloud} == {provider}, name
    out = stack["outputs"]
    assert out["training"]["region"] == out["batch"]["region"] == "us-west-2"
    assert out["inference"]["region"] == out["research"]["region"] == "eu-west-1"
    assert out["render"]["zone"] == "us-central1-b"  # the default provider's (gcp:zone)
    assert out["evaluation"]["zone"] == "europe-west4-a"  # the team's provider's
    # the research cluster's subnets are in the eu provider's zones
    zones = [
        r["inputs"]["availabilityZone"]
        for r in of_type(children(stack, "research"), "aws:ec2/subnet:Subnet")
    ]
    assert zones == ["eu-west-1a", "eu-west-1b"]


def test_the_team_resources_are_wired_in(stack: dict[str, Any]) -> None:
    training = children(stack, "training")
    [group] = of_type(training, "aws:ec2/securityGroup:SecurityGroup")
    assert group["inputs"]["vpcId"] == "team-id"  # the VPC of the team's subnet
    assert [i["cidrBlocks"] for i in group["inputs"]["ingress"]] == [["10.20.0.0/16"]]
    for inst in of_type(training, "aws:ec2/instance:Instance"):
        assert inst["inputs"]["subnetId"] == "team-a-id"
        # its own group and the team's
        assert inst["inputs"]["vpcSecurityGroupIds"] == ["training-worker-id", "team-bastion-id"]
        assert inst["inputs"]["tags"]["team"] == "ml"
    [inst] = of_type(children(stack, "inference"), "aws:ec2/instance:Instance")
    assert inst["inputs"]["subnetId"] == "team-eu-a-id"
    [vm] = children(stack, "render")
    [nic] = vm["inputs"]["networkInterfaces"]
    assert (nic["network"], nic["subnetwork"]) == ("team-id", "team-us-id")
    [cluster] = of_type(children(stack, "batch"), "aws:eks/cluster:Cluster")
    assert cluster["inputs"]["vpcConfig"]["subnetIds"] == ["team-a-id", "team-b-id"]
    [group] = of_type(children(stack, "batch"), "aws:eks/nodeGroup:NodeGroup")
    assert group["inputs"]["subnetIds"] == ["team-a-id", "team-b-id"]


def test_every_output_of_every_component(stack: dict[str, Any]) -> None:
    out = stack["outputs"]
    for name, typ in COMPONENT_TYPES.items():
        vendor = VENDOR[typ.rsplit(":", 1)[1]]
        assert set(out[name]) == set(import_module(f"dreamlake.stacks.{vendor}").OUTPUTS), name
    t = out["training"]
    assert t["worker_hosts"][0] == t["worker_host"] and len(t["worker_hosts"]) == 2
    assert all(h.startswith("203.0.113.") for h in t["worker_hosts"])
    assert t["instance_ids"] == ["training-worker-0-id", "training-worker-1-id"]
    assert t["security_group_id"] == "training-worker-id" and t["vpc_id"] == "team-id"
    assert t["worker_user"] == "ubuntu"
    i = out["inference"]
    assert i["instance_ids"] == ["inference-worker-0-id"] and i["vpc_id"] == "team-eu-id"
    assert i["security_group_id"] == "inference-worker-id"
    for name in ("render", "evaluation"):
        vm = out[name]
        [state] = [r["state"] for r in children(stack, name)]
        assert vm["instance_name"] == state["name"] and vm["instance_id"] == state["instanceId"]
        assert vm["worker_host"].startswith("203.0.113.") and vm["internal_ip"].startswith(
            "10.128."
        )
        assert vm["worker_user"] is None
    for name in ("batch", "research"):
        c = out[name]
        assert c["cluster_name"] == f"{name}-prod" and c["node_group"] == f"{name}-prod-gpu"
        assert c["cluster_endpoint"] == "https://" + c["worker_host"]
        assert c["region"] in c["worker_host"] and c["cluster_ca_data"] == "Q0EtREFUQQ=="
    assert out["batch"]["vpc_id"] == "team-id"
    assert out["research"]["vpc_id"] == "research-vpc-id"
    assert out["lab-a"]["daemon_args"] == [
        "nymph", "--provider", "lab-a", "--instance-id", "lab-a",
        "--workdir", "/var/lib/nymph", "--queues", "gpu",
    ]  # fmt: skip
    b = out["lab-b"]
    assert (b["worker_name"], b["workdir"], b["queues"]) == (
        "lab-team-id",
        "/srv/nymph",
        ["gpu", "cpu"],
    )
    assert b["daemon_args"][1:5] == ["--provider", "lab-b", "--instance-id", "lab-team-id"]
    assert stack["exports"] == {f"{n}_worker_host": out[n]["worker_host"] for n in COMPONENT_TYPES}


def test_the_kubeconfig_names_the_region_of_the_provider_used(stack: dict[str, Any]) -> None:
    for name, region in (("batch", "us-west-2"), ("research", "eu-west-1")):
        [prov] = of_type(children(stack, name), "pulumi:providers:kubernetes")
        kubeconfig = json.loads(prov["inputs"]["kubeconfig"])
        args = kubeconfig["users"][0]["user"]["exec"]["args"]
        assert args[-2:] == ["--region", region] and args[3] == f"{name}-prod"


ASKED = """
import pulumi
from dreamlake.stacks.ec2 import GpuWorkers, GpuWorkersArgs
from dreamlake.stacks.kube import GpuCluster, GpuClusterArgs

COMPONENTS = {
    "asked": GpuWorkers(
        "asked",
        GpuWorkersArgs(
            region="eu-west-1",
            subnet="subnet-0123456789abcdef0",
            instance_type="g5.xlarge",
            ami="ami-0123456789abcdef0",
        ),
    ),
    "default": GpuWorkers(
        "default",
        GpuWorkersArgs(
            subnet="subnet-0123456789abcdef0", instance_type="g5.xlarge", ami="ami-0123456789abcdef0"
        ),
    ),
    "cluster": GpuCluster(
        "cluster", GpuClusterArgs(region="ap-south-1", vpc="10.42.0.0/16", node_type=["g5.xlarge"])
    ),
}
"""


def test_a_region_asked_for_gets_a_provider_of_its_own(programs: list[dict[str, Any]]) -> None:
    """With ``aws:region = us-west-2`` in the stack config: a component whose args name
    a region makes its provider (its child) there; one that names none uses the
    stack's default provider; the ``region`` output says which was used."""
    res = programs[1]
    assert res["error"] is None, res["error"]
    provs = [r for r in res["resources"] if r["type"] == "pulumi:providers:aws"]
    assert sorted((p["name"], p["inputs"]["region"]) for p in provs) == [
        ("asked-aws", "eu-west-1"),
        ("cluster-aws", "ap-south-1"),
    ]
    comps = {r["urn"]: r["name"] for r in res["resources"] if r["type"].startswith("dreamlake:")}
    for p in provs:
        assert comps[p["parent"]] == p["name"].removesuffix("-aws")
    out = res["outputs"]
    assert out["asked"]["region"] == "eu-west-1"
    assert out["default"]["region"] == "us-west-2"
    assert out["cluster"]["region"] == "ap-south-1"
    for inst in (r for r in res["resources"] if r["type"] == "aws:ec2/instance:Instance"):
        if comps[inst["parent"]] == "asked":
            assert inst["provider"].endswith("::asked-aws-id")
        else:
            assert inst["provider"] == ""
