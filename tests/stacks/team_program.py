"""A platform team's own Pulumi program (its ``__main__.py``) embedding every dreamlake
component twice, as docs/pulumi.md shows: the team's network, security group and
providers are its own resources, wired into the components as ``Output``s.

The stack config it is run with (see ``test_team_program.py``): ``aws:region =
us-west-2``, ``gcp:project = team-project``, ``gcp:zone = us-central1-b``. Components
given no provider and no region use those defaults; the ``eu`` ones get the team's
providers.
"""

import pulumi
import pulumi_aws as aws
import pulumi_gcp as gcp
from dreamlake.stacks.ec2 import GpuWorkers, GpuWorkersArgs
from dreamlake.stacks.gce import GpuVm, GpuVmArgs
from dreamlake.stacks.kube import GpuCluster, GpuClusterArgs
from dreamlake.stacks.local import LocalWorker, LocalWorkerArgs

# -- the team's own resources ---------------------------------------------------------
vpc = aws.ec2.Vpc("team", cidr_block="10.20.0.0/16")
subnet_a = aws.ec2.Subnet(
    "team-a", vpc_id=vpc.id, cidr_block="10.20.1.0/24", availability_zone="us-west-2a"
)
subnet_b = aws.ec2.Subnet(
    "team-b", vpc_id=vpc.id, cidr_block="10.20.2.0/24", availability_zone="us-west-2b"
)
bastion = aws.ec2.SecurityGroup("team-bastion", vpc_id=vpc.id, description="from the bastion")

eu = aws.Provider("eu", region="eu-west-1")
eu_vpc = aws.ec2.Vpc("team-eu", cidr_block="10.30.0.0/16", opts=pulumi.ResourceOptions(provider=eu))
eu_subnet = aws.ec2.Subnet(
    "team-eu-a",
    vpc_id=eu_vpc.id,
    cidr_block="10.30.1.0/24",
    opts=pulumi.ResourceOptions(provider=eu),
)

network = gcp.compute.Network("team", auto_create_subnetworks=False)
subnetwork = gcp.compute.Subnetwork(
    "team-us", network=network.id, ip_cidr_range="10.40.0.0/20", region="us-central1"
)
gcp_eu = gcp.Provider("gcp-eu", project="team-eu-project", zone="europe-west4-a")

# -- ec2: two fleets, one per region --------------------------------------------------
training = GpuWorkers(
    "training",
    GpuWorkersArgs(
        subnet=subnet_a.id,  # an Output of the team's subnet
        instance_type="g5.xlarge",
        ami="ami-0123456789abcdef0",
        worker_count=2,
        ssh_ingress_cidrs=[vpc.cidr_block],  # an Output inside a list
        security_group_ids=[bastion.id],  # the team's group beside the component's own
        tags={"team": "ml"},
    ),
)  # no provider, no region: the stack's default provider (aws:region)
inference = GpuWorkers(
    "inference",
    GpuWorkersArgs(subnet=eu_subnet.id, instance_type="g6.xlarge", ami="ami-0fedcba9876543210"),
    opts=pulumi.ResourceOptions(providers=[eu]),
)

# -- gce: one on the default provider in the team's subnetwork, one on the team's own -----
render = GpuVm(
    "render",
    GpuVmArgs(gpu_type="nvidia-l4", network=network.id, subnetwork=subnetwork.id),
)
evaluation = GpuVm(
    "evaluation",
    GpuVmArgs(gpu_type="nvidia-tesla-t4", spot=True),
    opts=pulumi.ResourceOptions(providers=[gcp_eu]),
)

# -- kube: one cluster in the team's VPC, one in a VPC of its own in eu-west-1 --------------
batch = GpuCluster(
    "batch",
    GpuClusterArgs(vpc_id=vpc.id, subnet_ids=[subnet_a.id, subnet_b.id], node_type=["g5.xlarge"]),
)
research = GpuCluster(
    "research",
    GpuClusterArgs(vpc="10.50.0.0/16", node_type=["p4d.24xlarge"], node_min=1, node_max=2),
    opts=pulumi.ResourceOptions(providers=[eu]),
)

# -- local: two daemons on the build hosts ---------------------------------------------
lab_a = LocalWorker(
    "lab-a", LocalWorkerArgs(workdir="/var/lib/nymph", queues=["gpu"], worker_name="lab-a")
)
lab_b = LocalWorker(
    "lab-b",
    LocalWorkerArgs(
        workdir="/srv/nymph/",
        queues=["gpu", "cpu"],
        worker_name=vpc.id.apply(lambda i: f"lab-{i}"),  # an Output of the team's
    ),
)

COMPONENTS = {
    "training": training,
    "inference": inference,
    "render": render,
    "evaluation": evaluation,
    "batch": batch,
    "research": research,
    "lab-a": lab_a,
    "lab-b": lab_b,
}
for name, component in COMPONENTS.items():
    pulumi.export(f"{name}_worker_host", component.worker_host)
