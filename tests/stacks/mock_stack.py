"""Run one vendor's Pulumi program under the Pulumi SDK's own mocks
(``pulumi.runtime.set_mocks``) and print what it declared, as JSON.

    python mock_stack.py '[["<vendor>", {<config>}, "program|embed|main"], ...]'

``program``: ``program(Config(...))`` (the CLI's path); ``embed``: two components
(``a`` and ``b``) side by side in one program, as a team embedding them would;
``main``: the scaffolded file's ``main()`` reading the stack config with Pulumi's
typed getters; ``regions``: two components (``east`` and ``west``) of the same
args but their ``region`` (``us-east-1``, ``eu-west-1``) in one stack; ``stack:S``:
one component (``gpu``) of the config as its args but its ``cluster_name``, in the
stack named ``S``. Output: ``{"resources": [{urn, type, name, parent, custom,
inputs}], "outputs": {...}, "error": null}`` per scenario. The SDK keeps its
runtime settings in globals, so the tests run this in child processes (vendors
sharing a provider SDK in one; each scenario with fresh mocks).

The mocks stand in for the cloud APIs (NAMED here as a test double): they echo
the inputs back and add the few computed attributes the programs read
(instance IPs, the cluster endpoint, the subnet's VPC, the zones).
"""

from __future__ import annotations

import json
import secrets
import sys
from importlib import import_module
from typing import Any

import pulumi
from pulumi.runtime import Mocks, set_mocks
from pulumi.runtime.mocks import MockMonitor

ADOPTED_VPC = "vpc-0abc1234"
ADOPTED_SUBNETS = ("subnet-0aaa1111", "subnet-0bbb2222")
"""An existing VPC the double knows, and its subnets (the kube program adopts it)."""
DEFAULT_VPC, DEFAULT_SUBNET = "vpc-0d0d0d0d", "subnet-0d0d0d0d"
"""The default VPC and the subnet a lookup by attributes finds."""


# The properties the providers auto-name when a program leaves them out (the engine
# then names the resource after its logical name plus a random suffix).
AUTO_NAMED = {
    "aws:ec2/securityGroup:SecurityGroup": "name",
    "aws:iam/role:Role": "name",
    "aws:eks/cluster:Cluster": "name",
    "aws:eks/nodeGroup:NodeGroup": "nodeGroupName",
    "gcp:compute/instance:Instance": "name",
}


def _config(key: str) -> Any:
    from pulumi.runtime.config import get_config

    return get_config(key)


class CloudAPIDouble(Mocks):
    """TEST DOUBLE for the cloud provider APIs behind the mock monitor, and for the
    engine's auto-naming (``AUTO_NAMED``: the logical name plus a suffix)."""

    def __init__(self) -> None:
        self.count = 0
        self.providers: dict[str, dict[str, Any]] = {}  # provider id -> its inputs
        self.subnets: dict[str, dict[str, Any]] = {}  # subnet id -> its state

    def _provider_inputs(self, ref: str) -> dict[str, Any]:
        """The inputs of the provider a reference (``urn::id``) names; {} for the
        stack's default provider (an empty reference)."""
        return self.providers.get(ref.rsplit("::", 1)[-1], {}) if ref else {}

    def region_of(self, ref: str) -> str | None:
        inputs = self._provider_inputs(ref)
        return inputs.get("region") if ref else _config("aws:region")

    def new_resource(self, args: Any) -> tuple[str, dict[str, Any]]:
        self.count += 1
        n = self.count
        rid = f"{args.name}-id"
        state = dict(args.inputs)
        prop = AUTO_NAMED.get(args.typ)
        if prop and not state.get(prop):  # as the engine: a random suffix
            state[prop] = f"{args.name}-{secrets.token_hex(4)[:7]}"
        if args.typ.startswith("pulumi:providers:"):
            self.providers[rid] = dict(args.inputs)
        elif args.typ == "aws:ec2/instance:Instance":
            state |= {"publicIp": f"203.0.113.{n}", "privateIp": f"10.0.0.{n}"}
        elif args.typ == "aws:ec2/subnet:Subnet":
            self.subnets[rid] = state
        elif args.typ == "gcp:compute/instance:Instance":
            nic = dict((state.get("networkInterfaces") or [{}])[0])
            nic["networkIp"] = f"10.128.0.{n}"
            nic["accessConfigs"] = [{"natIp": f"203.0.113.{100 + n}"}]
            given = self._provider_inputs(args.provider)
            zone = state.get("zone") or given.get("zone") or _config("gcp:zone")
            project = state.get("project") or given.get("project") or _config("gcp:project")
            state |= {
                "networkInterfaces": [nic],
                "instanceId": f"42{n}",
                "zone": zone,
                "project": project,
            }
        elif args.typ == "aws:eks/cluster:Cluster":
            region = self.region_of(args.provider)
            state |= {
                "endpoint": f"https://ABC{n}.gr7.{region}.eks.amazonaws.com",
                "certificateAuthority": {"data": "Q0EtREFUQQ=="},
            }
        elif args.typ == "aws:iam/role:Role":
            state |= {"arn": f"arn:aws:iam::123456789012:role/{state.get('name')}"}
        return rid, state

    def call(self, args: Any) -> dict[str, Any]:
        if args.token == "aws:index/getRegion:getRegion":
            region = self.region_of(args.provider)
            return {"id": region, "name": region, "region": region}
        if args.token == "aws:ec2/getSubnet:getSubnet":
            if not args.args.get("id"):  # found by its attributes: the default VPC's
                return {"id": DEFAULT_SUBNET, "vpcId": DEFAULT_VPC}
            made = self.subnets.get(str(args.args.get("id")))
            vpc = made.get("vpcId") if made else "vpc-0abc1234"
            return {"id": args.args.get("id"), "vpcId": vpc}
        if args.token == "aws:ec2/getVpc:getVpc":
            if args.args.get("id") != ADOPTED_VPC:  # as the EC2 API: no such VPC
                raise Exception(f"no matching EC2 VPC found ({args.args.get('id')})")
            return {"id": ADOPTED_VPC, "cidrBlock": "10.0.0.0/16"}
        if args.token == "aws:ec2/getSubnets:getSubnets":
            # A VPC's subnets, only for a lookup filtered by that VPC's id: the adopted
            # VPC's, or those the program made in a VPC of its own.
            wanted = [f for f in args.args.get("filters") or [] if f.get("name") == "vpc-id"]
            vpc = (wanted[0].get("values") or [None])[0] if wanted else None
            ids = list(ADOPTED_SUBNETS) if vpc == ADOPTED_VPC else []
            ids += [sid for sid, st in self.subnets.items() if vpc and st.get("vpcId") == vpc]
            return {"id": vpc or "", "ids": ids}
        if args.token == "aws:index/getAvailabilityZones:getAvailabilityZones":
            region = self.region_of(args.provider) or "us-east-1"
            return {"names": [f"{region}a", f"{region}b", f"{region}c"], "zoneIds": []}
        return {}


class Recorder(MockMonitor):
    """The SDK's mock monitor, also keeping each registration's parent."""

    def __init__(self, mocks: Mocks) -> None:
        super().__init__(mocks)
        self.seen: list[dict[str, Any]] = []

    def RegisterResource(self, request: Any) -> Any:
        resp = super().RegisterResource(request)
        self.seen.append(
            {
                "urn": resp.urn,
                "type": request.type,
                "name": request.name,
                "parent": request.parent,
                "custom": bool(request.custom),
                "provider": request.provider,
            }
        )
        return resp


def run_one(vendor: str, raw: dict[str, Any], mode: str) -> dict[str, Any]:
    mocks = CloudAPIDouble()
    monitor = Recorder(mocks)
    stack = mode.split(":", 1)[1] if mode.startswith("stack:") else "lab"
    set_mocks(mocks, project="dreamlake", stack=stack, preview=False, monitor=monitor)
    pulumi.runtime.set_all_config({})
    states: dict[str, Any] = {}
    original = mocks.new_resource

    def keep(args: Any) -> tuple[str, dict[str, Any]]:
        rid, state = original(args)
        states[args.name + "|" + args.typ] = (args.inputs, state)
        return rid, state

    mocks.new_resource = keep  # type: ignore[method-assign]
    exported: dict[str, Any] = {}

    def export(key: str, value: Any) -> None:
        exported[key] = value
        REAL_EXPORT(key, value)

    pulumi.export = export  # type: ignore[assignment]
    mod = import_module(f"dreamlake.stacks.{vendor}")
    result: dict[str, Any] = {"error": None}

    @pulumi.runtime.test
    def run() -> Any:
        if mode == "main":
            pulumi.runtime.set_all_config(
                {
                    f"dreamlake:{k}": v if isinstance(v, str) else json.dumps(v)
                    for k, v in raw.items()
                }
            )
            mod.main()
        elif mode == "embed":
            cls = mod.component_class()
            a = cls("a", mod.Config(**raw))
            b = cls("b", mod.Config(**raw))
            return pulumi.Output.all(a.worker_host, b.worker_host).apply(
                lambda hosts: result.update(hosts=hosts)
            )
        elif mode == "regions":
            cls, args = mod.component_class(), mod.GpuClusterArgs
            for comp, region in (("east", "us-east-1"), ("west", "eu-west-1")):
                cls(comp, args(**raw, region=region))
        elif mode.startswith("stack:"):
            given = {k: v for k, v in raw.items() if k != "cluster_name"}
            mod.component_class()("gpu", mod.GpuClusterArgs(**given))
        else:
            mod.program(mod.Config(**raw))
        return pulumi.Output.all(**exported).apply(lambda v: result.update(outputs=v))

    try:
        run()
    except Exception as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
    for r in monitor.seen:
        r["inputs"], r["state"] = states.get(r["name"] + "|" + r["type"], (None, None))
    result["resources"] = monitor.seen
    return result


REAL_EXPORT = pulumi.export


def main() -> None:
    """argv[1]: a JSON list of ``[vendor, config, mode]``; prints a JSON list of results."""
    scenarios = json.loads(sys.argv[1])
    print(json.dumps([run_one(v, c, m) for v, c, m in scenarios], default=str))


if __name__ == "__main__":
    main()
