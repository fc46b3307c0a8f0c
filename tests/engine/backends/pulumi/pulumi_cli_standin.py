"""STAND-IN for the ``pulumi`` CLI binary (a test double, NAMED as such): the
tests put a ``pulumi`` script that runs this file first on PATH, so the Automation
API (``pulumi.automation``'s own LocalWorkspace, Stack and PulumiCommand code)
runs unchanged up to the process boundary. It speaks the protocol of the CLI
version the installed SDK expects (``pulumi version`` prints the SDK's version):

* every command starts with ``--non-interactive``; failures print the CLI's
  error text on stderr and exit 255 (the SDK classifies them itself);
* ``--event-log tcp://host:port``: engine events are streamed to the SDK's
  ``Events`` gRPC service (CLIs newer than 3.205), ending with a ``cancelEvent``;
* ``--client host:port`` (inline programs): the stand-in is the engine. It serves
  a ResourceMonitor and an Engine over gRPC and calls the SDK's LanguageRuntime
  ``Run``, so the provider's real ``__main__.py`` runs and registers its
  resources; registrations are echoed (no cloud), the root stack's outputs kept;
* the state is a file backend laid out as the real one (``.pulumi/meta.yaml``
  version 1, ``stacks/<project>/<stack>.json`` checkpoints, lock files under
  ``locks/organization/<project>/<stack>/``), so ``status`` reads it directly;
* ``stack select|init|output|history|export|import``, ``preview`` (and
  ``--refresh``, reading the cloud from ``$PULUMI_STANDIN_CLOUD``), ``up``,
  ``refresh``, ``destroy`` (and ``--preview-only``), ``cancel``.

Every argv is appended to ``$PULUMI_STANDIN_LOG`` (JSON lines) when set.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from concurrent import futures
from pathlib import Path
from typing import Any

import yaml

LOCK_MSG = (
    "error: the stack is currently locked by {n} lock(s). Either wait for the other "
    "process(es) to end or delete the lock file with `pulumi cancel`."
)


def fail(message: str, code: int = 255) -> None:
    sys.stderr.write(message.rstrip("\n") + "\n")
    sys.exit(code)


def version() -> str:
    from importlib.metadata import version as installed

    return installed("pulumi")  # the SDK's own version: the CLI it expects


class Args:
    def __init__(self, argv: list[str]) -> None:
        self.raw = [a for a in argv if a != "--non-interactive"]
        self.flags: dict[str, str] = {}
        self.bools: set[str] = set()
        self.pos: list[str] = []
        takes = {
            "--stack",
            "--event-log",
            "--exec-kind",
            "--config-file",
            "--save-plan",
            "--plan",
            "--file",
            "--color",
            "--page-size",
            "--page",
            "--parallel",
            "--message",
        }
        it = iter(self.raw)
        for a in it:
            if a.startswith("--") and "=" in a:
                k, v = a.split("=", 1)
                self.flags[k] = v
            elif a in takes:
                self.flags[a] = next(it, "")
            elif a.startswith("--"):
                self.bools.add(a)
            else:
                self.pos.append(a)


class Backend:
    """The file backend the real CLI would write (PULUMI_BACKEND_URL=file://...)."""

    def __init__(self, stack_ref: str, cwd: Path) -> None:
        url = os.environ.get("PULUMI_BACKEND_URL", "")
        if not url.startswith("file://"):
            fail(f"error: the stand-in speaks file backends only, not {url!r}")
        self.root = Path(url[len("file://") :].split("?", 1)[0])
        parts = stack_ref.split("/")
        proj = (
            yaml.safe_load((cwd / "Pulumi.yaml").read_text()).get("name", "dreamlake")
            if (cwd / "Pulumi.yaml").exists()
            else "dreamlake"
        )
        self.project = parts[-2] if len(parts) >= 2 else proj
        self.stack = parts[-1]
        p = self.root / ".pulumi"
        self.file = p / "stacks" / self.project / f"{self.stack}.json"
        self.lock_dir = p / "locks" / "organization" / self.project / self.stack
        self.history = p / "history" / self.project / self.stack / "standin-history.json"

    def exists(self) -> bool:
        return self.file.exists()

    def init(self) -> None:
        (self.root / ".pulumi").mkdir(parents=True, exist_ok=True)
        (self.root / ".pulumi" / "meta.yaml").write_text("version: 1\n")
        self.save(None)

    def load(self) -> dict[str, Any] | None:
        data = json.loads(self.file.read_text())
        return data["checkpoint"].get("latest")

    def save(self, latest: dict[str, Any] | None) -> None:
        self.file.parent.mkdir(parents=True, exist_ok=True)
        cp = {"stack": f"organization/{self.project}/{self.stack}", "latest": latest}
        tmp = self.file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"version": 3, "checkpoint": cp}, indent=2))
        tmp.replace(self.file)

    def locks(self) -> list[Path]:
        return sorted(self.lock_dir.glob("*.json")) if self.lock_dir.is_dir() else []

    def check_unlocked(self) -> None:
        locks = self.locks()
        if locks:
            lines = [LOCK_MSG.format(n=len(locks))]
            for lk in locks:
                info = json.loads(lk.read_text())
                lines.append(
                    f"  file://{lk}: created by {info['username']}@{info['hostname']} "
                    f"(pid {info['pid']}) at {info['timestamp']}"
                )
            fail("\n".join(lines))

    def lock(self) -> Path:
        self.check_unlocked()
        self.lock_dir.mkdir(parents=True, exist_ok=True)
        path = self.lock_dir / f"{uuid.uuid4()}.json"
        path.write_text(
            json.dumps(
                {
                    "pid": os.getpid(),
                    "username": "standin",
                    "hostname": os.uname().nodename,
                    "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ"),
                }
            )
        )
        return path

    def record(self, kind: str, changes: dict[str, int]) -> None:
        self.history.parent.mkdir(parents=True, exist_ok=True)
        entries = json.loads(self.history.read_text()) if self.history.exists() else []
        now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
        entries.insert(
            0,
            {
                "kind": kind,
                "startTime": now,
                "endTime": now,
                "message": "",
                "environment": {},
                "config": {},
                "result": "succeeded",
                "version": len(entries) + 1,
                "resourceChanges": changes,
            },
        )
        self.history.write_text(json.dumps(entries))

    def outputs(self) -> dict[str, Any]:
        latest = self.load() or {}
        for r in latest.get("resources") or []:
            if r.get("type") == "pulumi:pulumi:Stack":
                return dict(r.get("outputs") or {})
        return {}


class Events:
    """Engine events for the SDK's Events gRPC service (``--event-log tcp://...``)."""

    def __init__(self, target: str | None) -> None:
        self.target = target
        self.items: list[dict[str, Any]] = []

    def add(self, **event: Any) -> None:
        self.items.append({"sequence": len(self.items) + 1, "timestamp": int(time.time()), **event})

    def step(self, op: str, urn: str, typ: str, planning: bool) -> None:
        meta = {"op": op, "urn": urn, "type": typ, "provider": ""}
        self.add(resourcePreEvent={"metadata": meta, "planning": planning})
        if not planning:
            self.add(resOutputsEvent={"metadata": meta, "planning": planning})

    def send(self, changes: dict[str, int]) -> None:
        self.add(
            summaryEvent={"maybeCorrupt": False, "durationSeconds": 0, "resourceChanges": changes}
        )
        self.add(cancelEvent={})
        if not self.target:
            return
        import grpc
        from pulumi.runtime.proto import events_pb2, events_pb2_grpc

        if self.target.startswith("tcp://"):
            with grpc.insecure_channel(self.target[len("tcp://") :]) as ch:
                stub = events_pb2_grpc.EventsStub(ch)
                stub.StreamEvents(
                    iter([events_pb2.EventRequest(event=json.dumps(e)) for e in self.items])
                )
        else:  # an older SDK's file event log
            with open(self.target, "a", encoding="utf-8") as fh:
                fh.writelines(json.dumps(e) + "\n" for e in self.items)


class Engine:
    """Runs the inline program through the SDK's LanguageRuntime (``--client``),
    serving the ResourceMonitor and Engine it registers with."""

    def __init__(self, project: str, stack: str) -> None:
        self.project, self.stack = project, stack
        self.resources: list[dict[str, Any]] = []
        self.root = ""
        self.logs: list[tuple[int, str]] = []

    def urn(self, parent: str, typ: str, name: str) -> str:
        qualified = parent.split("::")[2] if parent else ""
        if qualified and qualified != "pulumi:pulumi:Stack":  # the root stack is left out
            typ = f"{qualified}${typ}"
        return f"urn:pulumi:{self.stack}::{self.project}::{typ}::{name}"

    def run(self, client: str, config: dict[str, str], dry_run: bool) -> str:
        import grpc
        from google.protobuf import empty_pb2, json_format
        from pulumi.runtime.proto import (
            engine_pb2,
            engine_pb2_grpc,
            language_pb2,
            language_pb2_grpc,
            resource_pb2,
            resource_pb2_grpc,
        )

        eng = self

        class Monitor(resource_pb2_grpc.ResourceMonitorServicer):
            def SupportsFeature(self, request: Any, context: Any) -> Any:
                return resource_pb2.SupportsFeatureResponse(hasSupport=False)

            def RegisterResource(self, request: Any, context: Any) -> Any:
                urn = eng.urn(request.parent, request.type, request.name)
                custom = bool(request.custom)
                eng.resources.append(
                    {
                        "urn": urn,
                        "type": request.type,
                        "custom": custom,
                        "parent": request.parent or None,
                        "inputs": json_format.MessageToDict(request.object),
                        "outputs": json_format.MessageToDict(request.object),
                        "id": f"{request.name}-id" if custom else "",
                    }
                )
                return resource_pb2.RegisterResourceResponse(
                    urn=urn, id=f"{request.name}-id" if custom else "", object=request.object
                )

            def RegisterResourceOutputs(self, request: Any, context: Any) -> Any:
                for r in eng.resources:
                    if r["urn"] == request.urn:
                        r["outputs"] = json_format.MessageToDict(request.outputs)
                return empty_pb2.Empty()

            def Invoke(self, request: Any, context: Any) -> Any:
                return resource_pb2.InvokeResponse()

            def SignalAndWaitForShutdown(self, request: Any, context: Any) -> Any:
                return empty_pb2.Empty()

        class EngineService(engine_pb2_grpc.EngineServicer):
            def Log(self, request: Any, context: Any) -> Any:
                eng.logs.append((request.severity, request.message))
                return empty_pb2.Empty()

            def GetRootResource(self, request: Any, context: Any) -> Any:
                return engine_pb2.GetRootResourceResponse(urn=eng.root)

            def SetRootResource(self, request: Any, context: Any) -> Any:
                eng.root = request.urn
                return engine_pb2.SetRootResourceResponse()

        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        resource_pb2_grpc.add_ResourceMonitorServicer_to_server(Monitor(), server)
        engine_pb2_grpc.add_EngineServicer_to_server(EngineService(), server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        try:
            with grpc.insecure_channel(client) as ch:
                stub = language_pb2_grpc.LanguageRuntimeStub(ch)
                resp = stub.Run(
                    language_pb2.RunRequest(
                        project=self.project,
                        stack=self.stack,
                        pwd=os.getcwd(),
                        program=".",
                        args=[f"127.0.0.1:{port}"],
                        config=config,
                        dryRun=dry_run,
                        parallel=4,
                        monitor_address=f"127.0.0.1:{port}",
                        organization="organization",
                    )
                )
        finally:
            server.stop(0)
        return str(resp.error)


def stack_config(cwd: Path, args: Args, stack: str) -> dict[str, str]:
    file = Path(args.flags.get("--config-file") or cwd / f"Pulumi.{stack}.yaml")
    if not file.is_absolute():
        file = cwd / file
    if not file.exists():
        return {}
    data = yaml.safe_load(file.read_text()) or {}
    return {
        k: v if isinstance(v, str) else json.dumps(v) for k, v in (data.get("config") or {}).items()
    }


def deploy(be: Backend, args: Args, cwd: Path, kind: str) -> None:
    events = Events(args.flags.get("--event-log"))
    if not be.exists():
        fail(f"error: no stack named '{be.stack}' found")
    latest = be.load() or {}
    before = {r["urn"]: r for r in latest.get("resources") or []}
    planning = kind == "preview"
    lock = None if planning else be.lock()
    try:
        client = args.flags.get("--client")
        engine = Engine(be.project, be.stack)
        if client:
            error = engine.run(client, stack_config(cwd, args, be.stack), dry_run=planning)
            if error:
                diags = "\n".join(f"    {m.strip()}" for _s, m in engine.logs if m.strip())
                fail(
                    f"Diagnostics:\n  pulumi:pulumi:Stack ({be.project}-{be.stack}):\n{diags}\n"
                    f"error: an unhandled error occurred: {error}"
                )
        after = {r["urn"]: r for r in engine.resources}
        if planning and "--refresh" in args.bools:
            refresh_steps(events, before)
        changes: dict[str, int] = {}
        for urn, r in after.items():
            op = "same" if urn in before else "create"
            changes[op] = changes.get(op, 0) + 1
            events.step(op, urn, r["type"], planning)
        for urn, r in before.items():
            if urn not in after:
                changes["delete"] = changes.get("delete", 0) + 1
                events.step("delete", urn, r["type"], planning)
        if "--save-plan" in args.flags:
            Path(args.flags["--save-plan"]).write_text(json.dumps({"resources": list(after)}))
        if not planning:
            latest = {
                "manifest": {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ")},
                "resources": list(after.values()),
            }
            be.save(latest)
            be.record("update", changes)
        events.send(changes)
        print(f"{kind}: {sum(changes.values())} resources")
    finally:
        if lock:
            lock.unlink(missing_ok=True)


def refresh_steps(events: Events, before: dict[str, dict[str, Any]]) -> None:
    """``preview --refresh``: one ``refresh`` step per resource in the state, its
    ``old`` state as recorded and its ``new`` one as the cloud holds it. The cloud is
    the double ``$PULUMI_STANDIN_CLOUD`` (a JSON file: URN → outputs now, ``null``
    for a resource gone); a resource it does not name is unchanged."""
    path = os.environ.get("PULUMI_STANDIN_CLOUD")
    cloud = json.loads(Path(path).read_text()) if path else {}
    for urn, r in before.items():
        old = {"type": r["type"], "urn": urn, "outputs": r.get("outputs") or {}}
        meta: dict[str, Any] = {"op": "refresh", "urn": urn, "type": r["type"], "provider": ""}
        meta["old"] = old
        now = cloud[urn] if urn in cloud else old["outputs"]
        if now is not None:
            meta["new"] = {**old, "outputs": now}
        events.add(resourcePreEvent={"metadata": meta, "planning": True})
        events.add(resOutputsEvent={"metadata": meta, "planning": True})


def refresh(be: Backend, args: Args) -> None:
    lock = be.lock()
    try:
        latest = be.load() or {}
        pending = latest.get("pending_operations") or []
        creates = [p for p in pending if p.get("type") == "creating"]
        if creates and "--clear-pending-creates" not in args.bools:
            fail(
                "error: refresh found pending create operations; pass --clear-pending-creates or "
                "--import-pending-creates"
            )
        latest["pending_operations"] = []
        be.save(latest)
        changes = {"same": len(latest.get("resources") or [])}
        be.record("refresh", changes)
        Events(args.flags.get("--event-log")).send(changes)
    finally:
        lock.unlink(missing_ok=True)


def destroy(be: Backend, args: Args) -> None:
    events = Events(args.flags.get("--event-log"))
    latest = be.load() or {}
    resources = latest.get("resources") or []
    for r in resources:
        events.step("delete", r["urn"], r["type"], "--preview-only" in args.bools)
    changes = {"delete": len(resources)} if resources else {}
    if "--preview-only" not in args.bools:
        lock = be.lock()
        try:
            be.save({"manifest": {}, "resources": []})
            be.record("destroy", changes)
        finally:
            lock.unlink(missing_ok=True)
    events.send(changes)


def main() -> None:
    argv = sys.argv[1:]
    log = os.environ.get("PULUMI_STANDIN_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(
                json.dumps(
                    {
                        "argv": argv,
                        "cwd": os.getcwd(),
                        "env": {k: v for k, v in os.environ.items() if k.startswith("PULUMI_")},
                    }
                )
                + "\n"
            )
    args = Args(argv)
    cwd = Path.cwd()
    if args.pos[:1] == ["version"]:
        print(f"v{version()}")
        return
    verb = args.pos[0] if args.pos else ""
    sub = args.pos[1] if verb == "stack" and len(args.pos) > 1 else ""
    ref = args.flags.get("--stack") or (args.pos[2] if sub == "init" and len(args.pos) > 2 else "")
    be = Backend(ref, cwd)
    if verb == "stack" and sub == "select":
        if not be.exists():
            fail(f"error: no stack named '{be.stack}' found")
        return
    if verb == "stack" and sub == "init":
        if be.exists():
            fail(f"error: stack '{be.stack}' already exists")
        be.init()
        print(f"Created stack '{be.stack}'")
        return
    if not be.exists():
        fail(f"error: no stack named '{be.stack}' found")
    if verb == "stack" and sub == "output":
        print(json.dumps(be.outputs()))
    elif verb == "stack" and sub == "history":
        print(be.history.read_text() if be.history.exists() else "[]")
    elif verb == "stack" and sub == "export":
        print(json.dumps({"version": 3, "deployment": be.load() or {}}))
    elif verb == "stack" and sub == "import":
        data = json.loads(Path(args.flags["--file"]).read_text())
        be.save(data.get("deployment"))
    elif verb == "cancel":
        for lk in be.locks():
            lk.unlink()
        print(f"The currently running update for '{be.stack}' has been canceled!")
    elif verb in ("preview", "up"):
        deploy(be, args, cwd, verb)
    elif verb == "refresh":
        refresh(be, args)
    elif verb == "destroy":
        destroy(be, args)
    else:
        fail(f"error: the stand-in does not implement `pulumi {' '.join(args.pos)}`")


if __name__ == "__main__":
    main()
