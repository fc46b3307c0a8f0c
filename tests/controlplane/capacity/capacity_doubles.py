"""Launcher TEST DOUBLES for capacity tests (no cloud runs here): each stands in for
a launcher module and answers a launch the way the named cloud answers when it has
no capacity — the same error codes and sentences — or launches a fake instance."""

from __future__ import annotations

from typing import Any


class RefusingCloudDouble:
    """A launcher double: providers named in ``refuse`` answer every launch with
    ``message`` (a cloud's capacity refusal); the others launch fake instances."""

    def __init__(self, refuse: dict[str, str] | None = None) -> None:
        self.refuse = dict(refuse or {})
        self.launched: list[tuple[str, str, dict[str, Any]]] = []
        self.terminated: list[str] = []
        self.calls: list[str] = []
        self.dispatches: list[str] = []

    def launch(self, order: Any) -> dict[str, Any]:
        self.calls.append(order.provider)
        self.dispatches.append(order.dispatch)
        if order.provider in self.refuse:
            raise RuntimeError(self.refuse[order.provider])
        out = []
        for i in range(order.count):
            iid = f"fake-{order.provider}-{len(self.launched)}"
            self.launched.append((order.provider, iid, dict(order.kwargs)))
            out.append({"id": iid, "state": "pending", "index": i})
        return {"instances": out}

    def describe(self, order: Any, ids: Any) -> dict[str, str]:
        return {i: ("terminated" if i in self.terminated else "running") for i in ids}

    def terminate(self, order: Any, ids: Any) -> None:
        self.terminated.extend(ids)


EC2_NO_CAPACITY = (
    "An error occurred (InsufficientInstanceCapacity) when calling the RunInstances "
    "operation (reached max retries: 2): We currently do not have sufficient g5.xlarge "
    "capacity in the Availability Zone you requested (us-east-1a)."
)
EC2_LIMIT = (
    "An error occurred (InstanceLimitExceeded) when calling the RunInstances operation: "
    "You have requested more instances (21) than your current instance limit of 20 allows"
)
GCE_EXHAUSTED = (
    "Google Cloud refused the request: The zone 'projects/p/zones/us-central1-a' does not "
    "have enough resources available to fulfill the request. '(resource type:compute)'. "
    "ZONE_RESOURCE_POOL_EXHAUSTED"
)
SLURM_FULL = (
    "sbatch refused the job: sbatch: error: QOSMaxSubmitJobPerUserLimit\n"
    "sbatch: error: Batch job submission failed: Job violates accounting/QOS policy "
    "(job submit limit, user's size and/or time limits)"
)
