"""The `kube` Pulumi program: an EKS cluster with a GPU node group.

The :class:`GpuCluster` component mirrors ``templates/kube/terraform``: a VPC
across ``az_count`` zones with public subnets, the cluster and node IAM roles,
the EKS cluster and a GPU node group (tainted ``nvidia.com/gpu``), plus a
``dreamlake`` namespace created through ``pulumi_kubernetes`` for the daemon's
pods. ``pulumi_aws`` and ``pulumi_kubernetes`` are imported when the component
is built (they are in the ``pulumi-clouds`` extra), so the config model loads
without them. ``target_status`` is accepted and declares nothing here: a cluster
has no stopped state (the template's ADAPT.md says what suspending means for it).

This file needs the helpers every vendor shares (``dreamlake.stacks.support``) and
its config model (``dreamlake.stacks.kube.config``); a copy of it is yours to edit. One code path,
three ways in: ``GpuCluster(name, GpuClusterArgs(...), opts)`` inside your own program
(its arguments ``pulumi.Input`` values; a :class:`Config` is accepted too);
``program(Config(...))`` inline from Automation API code (what ``dreamlake
provider plan/apply`` run); ``pulumi up`` in a project whose ``__main__.py`` is
this file (:func:`main` reads :class:`Config` from the stack config, e.g.
``dreamlake:vpc``).
"""

from __future__ import annotations

import ipaddress
import json
import re
from functools import cache
from typing import Any, cast

from dreamlake.stacks import support
from dreamlake.stacks.kube.config import _VPC_ID, Config, GpuClusterArgs
from dreamlake.stacks.support import given_provider, lift

OUTPUTS: tuple[str, ...] = (
    "worker_host",
    "cluster_name",
    "cluster_endpoint",
    "cluster_ca_data",
    "node_group",
    "vpc_id",
    "region",
)
"""The stack outputs, the same names as the terraform template's ``outputs.tf``."""

TYPE = "dreamlake:kube:GpuCluster"
"""The component's Pulumi type token."""


def _assume(service: str) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"Service": service}}
            ],
        }
    )


def _kubeconfig(endpoint: str, ca: str, cluster: str, region: str) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "eks",
            "clusters": [
                {"name": "eks", "cluster": {"server": endpoint, "certificate-authority-data": ca}}
            ],
            "contexts": [{"name": "eks", "context": {"cluster": "eks", "user": "eks"}}],
            "users": [
                {
                    "name": "eks",
                    "user": {
                        "exec": {
                            "apiVersion": "client.authentication.k8s.io/v1beta1",
                            "command": "aws",
                            "args": [
                                "eks", "get-token", "--cluster-name", cluster, "--region", region,
                            ],
                        }
                    },
                }
            ],
        }
    )  # fmt: skip


@cache
def component_class() -> Any:
    """:class:`GpuCluster`, defined on first use so importing this file imports
    neither ``pulumi`` nor a cloud SDK."""
    import pulumi
    import pulumi_aws as aws
    import pulumi_kubernetes as k8s

    class GpuCluster(pulumi.ComponentResource):
        """An EKS cluster with a GPU node group, every resource its child.

        ``GpuCluster(name, args, opts)`` with a :class:`GpuClusterArgs` (or a
        :class:`Config`, or the same names as keyword arguments). The ``aws``
        provider: one passed in ``opts`` (``providers=[...]`` or ``provider=``); else,
        when ``args.region`` (or an endpoint setting) is given, one of the
        component's own for it; else the stack's default provider. The cluster is
        named ``args.cluster_name``, else ``<component name>-<stack>``; the IAM roles
        are auto-named. Outputs are
        attributes of the same names (``worker_host``, ``cluster_endpoint``, ...;
        ``region`` is the one of the provider used); ``outputs`` maps them all.
        """

        def __init__(
            self,
            name: str,
            args: GpuClusterArgs | Config | None = None,
            opts: pulumi.ResourceOptions | None = None,
            **kwargs: Any,
        ) -> None:
            # the cast names the type where a checker cannot resolve dreamlake.stacks
            args = cast(GpuClusterArgs, GpuClusterArgs.from_call(args, kwargs))
            super().__init__(TYPE, name, None, opts)
            self.args = args
            # The EKS cluster's name is the one physical name fixed (it is regional, and
            # the subnets are tagged with it before the cluster exists): the one asked
            # for, else the component's and the stack's, so two stacks do not clash.
            stack = re.sub(r"[^A-Za-z0-9_-]", "-", pulumi.get_stack())
            cname = args.cluster_name if args.cluster_name is not None else f"{name}-{stack}"
            provider = given_provider(opts, "aws")
            # A region (or an endpoint setting) asked for: a provider of our own for it.
            asked = args.region is not None or bool(args.aws_endpoints)
            if provider is None and (asked or args.aws_skip_credentials_validation):
                skip = args.aws_skip_credentials_validation
                provider = aws.Provider(
                    f"{name}-aws",
                    region=args.region if args.region is not None else aws.config.region,
                    endpoints=[aws.ProviderEndpointArgs(**args.aws_endpoints)]
                    if args.aws_endpoints
                    else None,
                    skip_credentials_validation=skip,
                    skip_requesting_account_id=skip,
                    skip_metadata_api_check=skip,
                    # As the terraform template's default_tags: the user's, then ours.
                    default_tags=aws.ProviderDefaultTagsArgs(
                        tags=lift(
                            lambda t, c: {**t, "dreamlake": "true", "dreamlake-provider": c},
                            args.tags,
                            cname,
                        )
                    ),
                    opts=pulumi.ResourceOptions(parent=self),
                )
            # None: the stack's default aws provider (or one the parent passes down).
            self.provider = provider
            child = pulumi.ResourceOptions(parent=self, provider=provider)
            invoke = pulumi.InvokeOptions(parent=self, provider=provider)
            vpc_id: Any
            subnet_ids: Any
            if args.vpc_id is not None:
                # An existing VPC of yours (an Output, say): its subnets, given or looked up.
                vpc_id = args.vpc_id
                subnet_ids = args.subnet_ids
                if subnet_ids is None:
                    subnet_ids = aws.ec2.get_subnets_output(
                        filters=[aws.ec2.GetSubnetsFilterArgs(name="vpc-id", values=[vpc_id])],
                        opts=invoke,
                    ).ids
            elif args.vpc is not None and _VPC_ID.match(args.vpc):
                # Adopt: the VPC's own subnets carry the cluster; none of its network is made.
                # Looked up first, as the template's data "aws_vpc": a VPC that does not
                # exist fails the preview instead of the cluster's creation.
                vpc_id = aws.ec2.get_vpc(id=args.vpc, opts=invoke).id
                subnet_ids = args.subnet_ids
                if subnet_ids is None:
                    subnet_ids = aws.ec2.get_subnets(
                        filters=[aws.ec2.GetSubnetsFilterArgs(name="vpc-id", values=[args.vpc])],
                        opts=invoke,
                    ).ids
            else:
                assert args.vpc is not None
                vpc_id, subnet_ids = self._network(name, cname, args, child, invoke)

            cluster_role = aws.iam.Role(
                f"{name}-cluster",  # auto-named: IAM names are account-wide
                assume_role_policy=_assume("eks.amazonaws.com"),
                opts=child,
            )
            cluster_policy = aws.iam.RolePolicyAttachment(
                f"{name}-cluster",
                role=cluster_role.name,
                policy_arn="arn:aws:iam::aws:policy/AmazonEKSClusterPolicy",
                opts=child,
            )
            node_role = aws.iam.Role(
                f"{name}-node",  # auto-named: IAM names are account-wide
                assume_role_policy=_assume("ec2.amazonaws.com"),
                opts=child,
            )
            node_policies = [
                aws.iam.RolePolicyAttachment(
                    f"{name}-node-{arn.rsplit('/', 1)[1]}",
                    role=node_role.name,
                    policy_arn=arn,
                    opts=child,
                )
                for arn in (
                    "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
                    "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
                    "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
                )
            ]
            cluster = aws.eks.Cluster(
                f"{name}-cluster",
                name=cname,
                version=args.kubernetes_version,
                role_arn=cluster_role.arn,
                vpc_config=aws.eks.ClusterVpcConfigArgs(
                    subnet_ids=subnet_ids,
                    endpoint_public_access=True,
                    endpoint_private_access=True,
                ),
                opts=pulumi.ResourceOptions(
                    parent=self, provider=provider, depends_on=[cluster_policy]
                ),
            )
            group = aws.eks.NodeGroup(
                f"{name}-gpu",
                cluster_name=cluster.name,
                node_group_name=pulumi.Output.concat(cname, "-gpu"),
                node_role_arn=node_role.arn,
                subnet_ids=subnet_ids,
                ami_type=args.node_ami_type,
                capacity_type=args.capacity_type,
                instance_types=args.node_type,
                disk_size=args.node_disk_gb,
                scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                    min_size=args.node_min,
                    desired_size=args.node_desired,
                    max_size=args.node_max,
                ),
                labels={"dreamlake/gpu": "true"},
                taints=[
                    aws.eks.NodeGroupTaintArgs(
                        key="nvidia.com/gpu", value="true", effect="NO_SCHEDULE"
                    )
                ],
                opts=pulumi.ResourceOptions(
                    parent=self,
                    provider=provider,
                    depends_on=node_policies,
                    ignore_changes=["scalingConfig.desiredSize"],
                ),
            )
            # What was built: the region of the provider the resources went to.
            region = aws.get_region_output(opts=invoke).region
            kubeconfig = pulumi.Output.all(
                cluster.endpoint, cluster.certificate_authority.data, cluster.name, region
            ).apply(lambda a: _kubeconfig(*a))
            cluster_provider = k8s.Provider(
                f"{name}-eks", kubeconfig=kubeconfig, opts=pulumi.ResourceOptions(parent=self)
            )
            namespace = k8s.core.v1.Namespace(
                f"{name}-dreamlake",
                metadata={"name": "dreamlake"},
                opts=pulumi.ResourceOptions(
                    parent=self, provider=cluster_provider, depends_on=[group]
                ),
            )

            self.cluster = cluster
            self.node_group_resource = group
            self.namespace = namespace
            self.worker_host = cluster.endpoint.apply(lambda e: e.removeprefix("https://"))
            self.cluster_name = cluster.name
            self.cluster_endpoint = cluster.endpoint
            self.cluster_ca_data = cluster.certificate_authority.data
            self.node_group = group.node_group_name
            self.vpc_id = pulumi.Output.from_input(vpc_id)
            self.region = region
            self.outputs: dict[str, Any] = {k: getattr(self, k) for k in OUTPUTS}
            self.register_outputs(self.outputs)

        def _network(
            self, name: str, cname: Any, args: GpuClusterArgs, child: Any, invoke: Any
        ) -> tuple[Any, list[Any]]:
            """A new VPC with one public subnet per zone, as the template's network.tf."""
            assert args.vpc is not None
            zones = aws.get_availability_zones(state="available", opts=invoke).names[
                : args.az_count
            ]
            blocks = list(ipaddress.ip_network(args.vpc, strict=False).subnets(prefixlen_diff=4))
            vpc = aws.ec2.Vpc(
                f"{name}-vpc",
                cidr_block=args.vpc,
                enable_dns_support=True,
                enable_dns_hostnames=True,
                tags={"Name": pulumi.Output.concat(cname, "-vpc")},
                opts=child,
            )
            igw = aws.ec2.InternetGateway(
                f"{name}-igw",
                vpc_id=vpc.id,
                tags={"Name": pulumi.Output.concat(cname, "-igw")},
                opts=child,
            )
            routes = aws.ec2.RouteTable(
                f"{name}-public",
                vpc_id=vpc.id,
                routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)],
                tags={"Name": pulumi.Output.concat(cname, "-public")},
                opts=child,
            )
            subnets = []
            for i, zone in enumerate(zones):
                subnet = aws.ec2.Subnet(
                    f"{name}-public-{i}",
                    vpc_id=vpc.id,
                    cidr_block=str(blocks[i]),
                    availability_zone=zone,
                    map_public_ip_on_launch=True,
                    tags=lift(
                        lambda c, zone=zone: {
                            "Name": f"{c}-public-{zone}",
                            "kubernetes.io/role/elb": "1",
                            f"kubernetes.io/cluster/{c}": "shared",
                        },
                        cname,
                    ),
                    opts=child,
                )
                aws.ec2.RouteTableAssociation(
                    f"{name}-public-{i}",
                    subnet_id=subnet.id,
                    route_table_id=routes.id,
                    opts=child,
                )
                subnets.append(subnet)
            return vpc.id, [s.id for s in subnets]

    return GpuCluster


def __getattr__(name: str) -> Any:
    if name == "GpuCluster":
        return component_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def program(config: Config | GpuClusterArgs, name: str = "dreamlake") -> Any:
    """The stack: one :class:`GpuCluster` whose outputs become the stack outputs."""
    import pulumi

    cluster = component_class()(name, config)
    for key, value in cluster.outputs.items():
        pulumi.export(key, value)
    return cluster


def read_pulumi_config() -> Config:
    """Read :class:`Config` from the running stack's config with Pulumi's typed
    getters (``dreamlake.stacks.support.read_pulumi_config``)."""
    return support.read_pulumi_config(Config)


def main() -> None:
    program(read_pulumi_config())


if __name__ == "__main__":
    main()
