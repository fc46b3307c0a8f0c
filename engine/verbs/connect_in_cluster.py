"""``connect`` for a provider whose daemon runs inside a cluster (the ``kube``
vendor): there is no host to SSH to — the applied infrastructure's ``worker_host``
is the cluster's API endpoint. The daemon runs as a Pod that the control plane's
Kube launcher creates, so connect touches nothing and says how to launch it."""

from __future__ import annotations

from ..contract.result import NextAction, ProviderLifecycleResult
from ..contract.result import Shell as ShellAction
from ..world.derive import Derived, Observation, derive
from ..world.observe import to_result

IN_CLUSTER_VENDORS = ("kube",)


def launch_command(name: str) -> str:
    return f"lakeshore launch --provider {name}"


def next_action(name: str, applied: bool, fallback: NextAction | None) -> NextAction | None:
    """Once the cluster is applied: the launch; before that, the status's own step."""
    return ShellAction(command=launch_command(name)) if applied else fallback


def in_cluster(obs: Observation) -> ProviderLifecycleResult:
    """Nothing touched. Once the cluster is applied the next action is the launch;
    before that, whatever the provider's status asks for (the cluster comes first)."""
    dv = derive(obs)
    infra = obs.infra
    applied = infra is not None and infra.present and infra.lock is None
    nxt = next_action(obs.name, applied, dv.next_action)
    return to_result(obs, Derived(dv.status, nxt, dv.blocking), files=[]).with_notes(
        f"'{obs.name}' runs its daemon inside the cluster, as a Pod the control plane's Kube "
        "launcher creates: connect does not SSH to the cluster's API endpoint. Register the "
        "cluster as a Kube provider in lakeshore (kubeconfig as a secret, dispatch daemon), "
        f"then: {launch_command(obs.name)}"
    )
