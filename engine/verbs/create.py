"""``dreamlake provider create``: scaffold once, then scan; never plan, never apply."""

from __future__ import annotations

from pathlib import Path

from ..contract import commands
from ..contract.errors import DreamlakeError, NotWritable, UsageError, VendorMismatch
from ..contract.result import ProviderLifecycleResult, Run
from ..world import lakeshore
from ..world.derive import Derived, derive, edit_action
from ..world.observe import observe, to_result
from ..world.paths import Root, check_name
from ..world.record import ProviderRecord, read_record
from ..world.scaffold import build, write_gitignore
from ..world.vendors import Template, get_template
from ._common import error_result, root_for


def _backend_for(template: Template, backend: str | None) -> str:
    if "none" in template.backends:
        if backend not in (None, "none"):
            raise UsageError(
                f"vendor {template.vendor!r} adopts an existing host and has no "
                f"infrastructure backend; drop --backend {backend}"
            )
        return "none"
    chosen = backend or template.default_backend
    if chosen not in template.backends:
        raise UsageError(
            f"vendor {template.vendor!r} supports the backends {', '.join(template.backends)}, "
            f"not {chosen!r}"
        )
    if chosen == "pulumi":
        from ..backends.pulumi.runtime import require_sdk

        require_sdk()  # before anything is scaffolded: nothing could run the program
    return chosen


def create(
    name: str,
    vendor: str | None = None,
    *,
    backend: str | None = None,
    continue_: bool = False,
    dream_dir: str | None = None,
    cwd: Path | None = None,
    probe: bool = True,
    stack: str | None = None,
) -> ProviderLifecycleResult:
    """Scaffold ``name`` from ``vendor`` once; on an existing provider ``vendor`` and
    ``backend`` default to what its provider.json records (so ``--continue`` needs
    neither). ``stack`` (``ORG/PROJECT/STACK``, pulumi backend): adopt that existing
    stack instead of scaffolding a program."""
    root = root_for(dream_dir, cwd)
    try:
        check_name(name)
        lakeshore.resolve_control_plane(root.path)  # an unreadable .dreamrc: before any write
        if stack is not None:
            from .adopt_stack import adopt_stack

            return adopt_stack(root, name, stack, vendor, backend, dream_dir, probe)
        record = read_record(root.provider_dir(name) / "provider.json", dream_dir)
        if vendor is None:
            if record is None:
                raise UsageError(
                    f"no provider named {name!r} under {root.providers} yet: "
                    "--provider names the vendor to scaffold it from",
                    next_action=Run(command=commands.create_help(name, dream_dir)),
                )
            vendor = record.vendor
        if backend is None and record is not None and record.vendor == vendor:
            backend = record.backend
        template = get_template(vendor)
        chosen = _backend_for(template, backend)
        return _create(root, name, record, template, chosen, continue_, dream_dir, probe)
    except DreamlakeError as exc:
        nxt = exc.next_action
        if nxt is None and exc.kind == "unknown_vendor":
            # Keep the name, ask for the vendor (the message lists the known ones).
            nxt = Run(command=commands.create_help(name if _ok(name) else None, dream_dir))
        if nxt is None and exc.kind == "usage" and _ok(name) and vendor:
            nxt = Run(command=commands.create(name, vendor, dream_dir))
        if nxt is None and exc.kind == "usage":
            nxt = Run(command=commands.create_help(name if _ok(name) else None, dream_dir))
        return error_result(
            exc,
            name,
            root=root if _ok(name) else None,
            vendor=vendor,
            dream_dir=dream_dir,
            default_next=nxt,
        ).model_copy(update={"root": str(root.path)})


def _ok(name: str) -> bool:
    try:
        check_name(name)
        return True
    except UsageError:
        return False


def _create(
    root: Root,
    name: str,
    record: ProviderRecord | None,
    template: Template,
    backend: str,
    continue_: bool,
    dream_dir: str | None,
    probe: bool,
) -> ProviderLifecycleResult:
    pdir = root.provider_dir(name)
    files: list[str] = []
    if record is None and pdir.exists() and any(pdir.iterdir()):
        # Scaffolded by another run since the record was read (a scaffold lands whole)?
        record = read_record(pdir / "provider.json", dream_dir)
    if record is None:
        if pdir.exists() and any(pdir.iterdir()):
            raise DreamlakeError(
                f"{pdir} exists but holds no provider.json; refusing to write into it — "
                "move it away or pick another name.",
                kind="dir_not_ours",
                next_action=Run(command=commands.create(f"{name}-2", template.vendor, dream_dir)),
            )
        # One name is one provider: a name another root registered is refused now,
        # before anything is written (a new scaffold gets a new identity).
        from ..world import lakeshore, rows

        rows.check(lakeshore.resolve_control_plane(root.path), name, "", dream_dir, template.vendor)
        try:
            written = build(root, name, template, backend)
            gi = write_gitignore(root)
        except OSError as exc:
            raise NotWritable(
                f"cannot write under {root.dream}: {exc.strerror or exc}",
                next_action=Run(
                    command=commands.create(name, template.vendor, "<a writable folder>")
                ),
            ) from exc
        if written is None:  # another run scaffolded it first: its record, read now
            theirs = read_record(pdir / "provider.json", dream_dir)
            assert theirs is not None
            return _existing(root, name, theirs, template, backend, dream_dir, probe, continue_)
        files = [str(p) for p in written] + ([str(gi)] if gi else [])
        obs = observe(name, root, dream_dir, probe=probe, infra=False, claims=False)
        return _scanned(obs, files)
    return _existing(root, name, record, template, backend, dream_dir, probe, continue_)


def _existing(
    root: Root,
    name: str,
    record: ProviderRecord,
    template: Template,
    backend: str,
    dream_dir: str | None,
    probe: bool,
    continue_: bool,
) -> ProviderLifecycleResult:
    if record.vendor != template.vendor or record.backend != backend:
        what = (
            f"vendor '{record.vendor}'. Refusing to overwrite it with '{template.vendor}'"
            if record.vendor != template.vendor
            else f"backend '{record.backend}'. Refusing to overwrite it with '{backend}'"
        )
        raise VendorMismatch(
            f"'{name}' was scaffolded from {what} — delete the directory or pick another name.",
            next_action=Run(command=commands.status(name, dream_dir)),
        )
    if continue_:
        obs = observe(name, root, dream_dir, probe=probe, infra=False, claims=False)
        if not obs.blocking:
            # Past scaffolding already (planned, applied, connected): where it stands,
            # as status says it, never "scaffolded" with plan again.
            world = observe(name, root, dream_dir, probe=False)
            dv = derive(world)
            if dv.status != "scaffolded":
                return to_result(world, dv, files=[])
        return _scanned(obs, [])
    obs = observe(name, root, dream_dir, probe=probe)
    dv = derive(obs)
    # ``connected`` alone has no next action; ``exists`` always has one: look again.
    nxt = dv.next_action or Run(command=commands.status(name, dream_dir))
    # The prose (``⚠ <dir>/ already exists from vendor …``) is the renderer's, once.
    return to_result(obs, Derived("exists", nxt, dv.blocking), files=[])


def _scanned(obs, files: list[str]) -> ProviderLifecycleResult:  # type: ignore[no-untyped-def]
    if obs.blocking:
        dv = Derived("needs_input", edit_action(obs, obs.blocking), obs.blocking)
    else:
        dv = Derived("scaffolded", Run(command=_after_scaffold(obs)), ())
    return to_result(obs, dv, files=files)


def _after_scaffold(obs) -> str:  # type: ignore[no-untyped-def]
    if obs.adopt:
        return commands.connect(obs.name, obs.dream_dir)
    return commands.plan(obs.name, obs.dream_dir)
