"""Run one vendor's Pulumi program under the Pulumi SDK's own mocks
(``pulumi.runtime.set_mocks``) and print what it declared, as JSON.

    python mock_stack.py '[["<vendor>", {<config>}, "program|embed|main"], ...]'

``program``: ``program(Config(...))`` (the CLI's path); ``embed``: two components
(``a`` and ``b``) side by side in one program, as a team embedding them would;
``main``: the scaffolded file's ``main()`` reading the stack config with Pulumi's
typed getters. Output: ``{"resources": [{urn, type, name, parent, custom,
inputs}], "outputs": {...}, "error": null}`` per scenario. The SDK keeps its
runtime settings in globals, so the tests run this in a child process (one per
vendor, each scenario with fresh mocks).

The mocks stand in for the cloud APIs (NAMED here as a test double): they echo
the inputs back and add the few computed attributes the programs read
(instance IPs, the cluster endpoint, the subnet's VPC, the zones).
"""

from __future__ import annotations

import json
import sys
from importlib import import_module
from typing import Any

import pulumi
from pulumi.runtime import Mocks, set_mocks
from pulumi.runtime.mocks import MockMonitor

ADOPTED_VPC = "vpc-0abc1234"
ADOPTED_SUBNETS = ("subnet-0aaa1111", "subnet-0bbb2222")
"""An existing VPC the double knows, and its subnets (the kube program adopts it)."""


class CloudAPIDouble(Mocks):
    """TEST DOUBLE for the cloud provider APIs behind the mock monitor."""

    def __init__(self) -> None:
        self.count = 0

    def new_resource(self, args: Any) -> tuple[str, dict[str, Any]]:
        self.count += 1
        n = self.count
        state = dict(args.inputs)
        if args.typ == "aws:ec2/instance:Instance":
            state |= {"publicIp": f"203.0.113.{n}", "privateIp": f"10.0.0.{n}"}
        elif args.typ == "gcp:compute/instance:Instance":
            nic = dict((state.get("networkInterfaces") or [{}])[0])
            nic["networkIp"] = "10.128.0.2"
            nic["accessConfigs"] = [{"natIp": "203.0.113.20"}]
            state |= {"networkInterfaces": [nic], "instanceId": "4242"}
        elif args.typ == "aws:eks/cluster:Cluster":
            state |= {
                "endpoint": "https://ABC123.gr7.us-east-1.eks.amazonaws.com",
                "certificateAuthority": {"data": "Q0EtREFUQQ=="},
            }
        elif args.typ == "aws:iam/role:Role":
            state |= {"arn": f"arn:aws:iam::123456789012:role/{state.get('name')}"}
        return f"{args.name}-id", state

    def call(self, args: Any) -> dict[str, Any]:
        if args.token == "aws:ec2/getSubnet:getSubnet":
            return {"id": args.args.get("id"), "vpcId": "vpc-0abc1234"}
        if args.token == "aws:ec2/getVpc:getVpc":
            if args.args.get("id") != ADOPTED_VPC:  # as the EC2 API: no such VPC
                raise Exception(f"no matching EC2 VPC found ({args.args.get('id')})")
            return {"id": ADOPTED_VPC, "cidrBlock": "10.0.0.0/16"}
        if args.token == "aws:ec2/getSubnets:getSubnets":
            # The adopted VPC's subnets, only for a lookup filtered by that VPC's id.
            wanted = [f for f in args.args.get("filters") or [] if f.get("name") == "vpc-id"]
            ours = bool(wanted) and wanted[0].get("values") == [ADOPTED_VPC]
            return {"id": ADOPTED_VPC, "ids": list(ADOPTED_SUBNETS) if ours else []}
        if args.token == "aws:index/getAvailabilityZones:getAvailabilityZones":
            return {"names": ["us-east-1a", "us-east-1b", "us-east-1c"], "zoneIds": []}
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
            }
        )
        return resp


def run_one(vendor: str, raw: dict[str, Any], mode: str) -> dict[str, Any]:
    mocks = CloudAPIDouble()
    monitor = Recorder(mocks)
    set_mocks(mocks, project="dreamlake", stack="lab", preview=False, monitor=monitor)
    pulumi.runtime.set_all_config({})
    states: dict[str, Any] = {}
    original = mocks.new_resource

    def keep(args: Any) -> tuple[str, dict[str, Any]]:
        rid, state = original(args)
        states[args.name + "|" + args.typ] = args.inputs
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
        else:
            mod.program(mod.Config(**raw))
        return pulumi.Output.all(**exported).apply(lambda v: result.update(outputs=v))

    try:
        run()
    except Exception as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
    for r in monitor.seen:
        r["inputs"] = states.get(r["name"] + "|" + r["type"])
    result["resources"] = monitor.seen
    return result


REAL_EXPORT = pulumi.export


def main() -> None:
    """argv[1]: a JSON list of ``[vendor, config, mode]``; prints a JSON list of results."""
    scenarios = json.loads(sys.argv[1])
    print(json.dumps([run_one(v, c, m) for v, c, m in scenarios], default=str))


if __name__ == "__main__":
    main()
