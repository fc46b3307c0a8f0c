"""``create --backend pulumi --stack ORG/PROJECT/STACK``: adopt a stack a team
already manages (see ``backends.pulumi.adopt``). The result is what ``status``
derives from that stack's state; a stack whose outputs name no worker host is
said so, with how to fix it."""

from __future__ import annotations

from ..contract import commands
from ..contract.errors import UsageError
from ..contract.result import ProviderLifecycleResult, Run
from ..world.observe import observe, to_result
from ..world.paths import Root


def adopt_stack(
    root: Root,
    name: str,
    stack: str,
    vendor: str | None,
    backend: str | None,
    dream_dir: str | None,
    probe: bool,
) -> ProviderLifecycleResult:
    from ..backends.pulumi.adopt import ADOPTED_VENDOR, adopt

    if backend not in (None, "pulumi") or vendor not in (None, ADOPTED_VENDOR):
        raise UsageError(
            "--stack adopts an existing Pulumi stack: it takes --backend pulumi and no "
            "--provider (dreamlake does not own the stack's program)",
            next_action=Run(
                command=f"dreamlake provider create -n {name} --backend pulumi --stack {stack}"
                + (f" --dream-dir {dream_dir}" if dream_dir else "")
            ),
        )
    from ..backends.pulumi.runtime import require_sdk

    require_sdk()
    written = adopt(root, name, stack)
    obs = observe(name, root, dream_dir, probe=probe)
    if written is None:
        res = to_result(obs).model_copy(update={"status": "exists"})
        return res.with_notes(f"'{name}' already adopts {stack}; nothing was written")
    res = to_result(obs, files=[str(p) for p in written])
    outputs = (obs.infra.outputs if obs.infra else {}) or {}
    if obs.infra is not None and obs.infra.present and not outputs.get("worker_host"):
        res = res.with_notes(
            f"the stack's outputs name no worker_host: export one from its program, or pass "
            f"--host to `{commands.connect(name, dream_dir)}`"
        )
    return res
