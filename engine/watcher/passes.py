"""One pass of the watcher over a root: look at every provider, act where an ungated
step is due, report what changed, publish what it saw.

Events go to ``emit`` as dicts (one JSON line each under ``--json``)::

    {"event": "state", "provider": "lab", "status": "unclaimed", "targetStatus": "active",
     "step": "connect", "gated": false, "why": "...", "nextAction": {...}, "at": "..."}

``state`` (a provider's status, step or report changed since the last pass: a gated
step is reported here once per change, with the ``reconcile --yes`` a person would
run, flagged ``approval``), ``acting`` / ``acted`` / ``failed`` (a step performed;
``failed`` says when it is tried again), ``drift`` (a drift check's answer),
``drift_unavailable``, ``pass`` (the pass's summary).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..contract.result import ProviderLifecycleResult
from ..lifecycle.actual import ShellFactory
from ..world.derive import Observation
from ..world.paths import Root
from .backoff import Backoff
from .lock import now_iso
from .look import Seen, look

Emit = Callable[[dict[str, Any]], None]
CONNECT_WATCH = 20.0  # how long connect waits for the restarted daemon's claim


@dataclass
class Watcher:
    """The watcher's memory across passes: what it last reported for each provider,
    and its backoff."""

    root: Root
    dream_dir: str | None
    emit: Emit
    names: list[str] | None = None  # None: every provider of the root
    stop: threading.Event = field(default_factory=threading.Event)
    shell_factory: ShellFactory | None = None
    publish: bool = True
    backoff: Backoff = field(default_factory=Backoff)
    reported: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    holder: dict[str, Any] = field(default_factory=dict)
    _no_drift: bool = False

    # -- one pass ------------------------------------------------------------------

    def run_pass(self, *, drift: bool = False) -> dict[str, Any]:
        """Look at every provider, act, report, publish; returns the ``pass`` event."""
        from ..verbs.listing import observe_all
        from ..world.lakeshore import resolve_control_plane

        started, cpu = time.monotonic(), time.process_time()
        cp = resolve_control_plane(self.root.path)
        if drift:
            self._drift_checks(observe_all(self.root, self.dream_dir, names=self.names, cp=cp,
                                           claims=False))  # fmt: skip
        seen = observe_all(self.root, self.dream_dir, names=self.names, cp=cp)
        acted = gated = 0
        published: list[tuple[Seen, ProviderLifecycleResult]] = []
        stopped = False
        for item in seen:
            if self.stop.is_set():
                stopped = True  # SIGTERM: the provider in hand was finished; no next one
                break
            s = self._look(item)
            self._report(s)
            gated += s.decision.gated
            final = s.result
            if s.decision.do in ("connect", "reconcile") and s.obs is not None:
                final = self._act(s, s.obs)
                acted += final is not s.result  # not while it is backed off
            published.append((s, final))
        at = now_iso()
        sent = self._publish(cp, published, at) if self.publish else 0
        doc = {
            "event": "pass",
            "providers": len(published),
            "acted": acted,
            "gated": gated,
            "drift": drift,
            "published": sent,
            "seconds": round(time.monotonic() - started, 3),
            "cpuSeconds": round(time.process_time() - cpu, 3),
            "stopped": stopped,
        }
        self.emit({**doc, "at": at})
        return doc

    def _look(self, item: Observation | ProviderLifecycleResult) -> Seen:
        """:func:`look`, a provider whose status cannot be derived being its error."""
        from ..contract.errors import DreamlakeError
        from ..verbs._common import error_result

        try:
            return look(item, self.shell_factory)
        except (DreamlakeError, ValueError) as exc:
            err = exc if isinstance(exc, DreamlakeError) else DreamlakeError(str(exc))
            name = item.name if isinstance(item, Observation) else item.provider
            return look(error_result(err, name, root=self.root, dream_dir=self.dream_dir), None)

    # -- reporting -----------------------------------------------------------------

    def _report(self, s: Seen) -> None:
        """A ``state`` event when what the watcher would say of a provider changed."""
        d = s.decision
        nxt = self._next_action(s)
        key = (s.result.status, s.target, d.do, d.step, d.gated, str(nxt))
        if self.reported.get(s.name) == key:
            return
        self.reported[s.name] = key
        self.emit(
            {
                "event": "state",
                "provider": s.name,
                "status": s.result.status,
                "targetStatus": s.target,
                "step": d.step,
                "gated": d.gated,
                "does": d.do,
                "why": d.why,
                "nextAction": nxt,
                "at": now_iso(),
            }
        )

    def _next_action(self, s: Seen) -> dict[str, Any] | None:
        """The next action a person (or agent) would take: for a gated step, the
        ``reconcile --yes`` that performs it, flagged ``approval`` as reconcile flags it."""
        if s.decision.gated and s.obs is not None:
            from ..contract import commands
            from ..world.derive import gated_run

            run = gated_run(
                s.obs, commands.reconcile(s.name, self.dream_dir, True), s.decision.step
            )
            out: dict[str, Any] = run.model_dump(by_alias=True, exclude_none=True)
            return out
        nxt = s.result.to_wire().get("nextAction")
        return nxt if isinstance(nxt, dict) else None

    # -- acting --------------------------------------------------------------------

    def _act(self, s: Seen, obs: Observation) -> ProviderLifecycleResult:
        now = time.monotonic()
        left = self.backoff.waiting(s.name, now)
        if left > 0:
            self.emit({"event": "backoff", "provider": s.name, "step": s.decision.step,
                       "retryInSeconds": round(left, 1), "at": now_iso()})  # fmt: skip
            return s.result
        self.emit({"event": "acting", "provider": s.name, "step": s.decision.step,
                   "why": s.decision.why, "at": now_iso()})  # fmt: skip
        res = self._perform(s)
        wire = res.to_wire()
        ok = res.exit_code == 0 and res.status != "error"
        if s.decision.do == "connect":
            ok = ok and res.status in ("connected", "connecting")
        if s.decision.step == "finish":
            ok = ok and res.status != "applying"  # still interrupted: not again every pass
        if ok:
            self.backoff.succeeded(s.name)
            self.emit({"event": "acted", "provider": s.name, "step": s.decision.step,
                       "status": res.status, "nextAction": wire.get("nextAction"),
                       "at": now_iso()})  # fmt: skip
        else:
            pause = self.backoff.failed(s.name, time.monotonic())
            self.emit(
                {
                    "event": "failed",
                    "provider": s.name,
                    "step": s.decision.step,
                    "status": res.status,
                    "kind": res.kind,
                    "error": res.error,
                    "retryInSeconds": round(pause, 1),
                    "nextAction": wire.get("nextAction"),
                    "at": now_iso(),
                }
            )
        return res

    def _perform(self, s: Seen) -> ProviderLifecycleResult:
        """The step, by the verb a person would run: ``connect`` or ``reconcile``
        (without ``--yes``: it performs only what is not gated, as decided here)."""
        from ..contract.errors import DreamlakeError
        from ..verbs._common import error_result

        say: Callable[[str], None] = lambda _m: None  # noqa: E731
        try:
            if s.decision.do == "connect":
                from ..verbs.connect import connect

                return connect(s.name, dream_dir=self.dream_dir, cwd=self.root.path,
                               progress=say, watch=CONNECT_WATCH,
                               shell_factory=self.shell_factory)  # fmt: skip
            from ..verbs.reconcile import reconcile

            return reconcile(s.name, dream_dir=self.dream_dir, cwd=self.root.path,
                             progress=say, shell_factory=self.shell_factory)  # fmt: skip
        except DreamlakeError as exc:
            return error_result(exc, s.name, root=self.root, dream_dir=self.dream_dir)
        except Exception as exc:  # a step that broke must not end the watcher
            err = DreamlakeError(f"{s.decision.step} failed: {type(exc).__name__}: {exc}")
            return error_result(err, s.name, root=self.root, dream_dir=self.dream_dir)

    # -- drift ---------------------------------------------------------------------

    def _drift_checks(self, seen: list[Observation | ProviderLifecycleResult]) -> None:
        """Ask the backend whether the world moved, for every provider with
        infrastructure (``dreamlake provider drift``'s check, once each)."""
        try:
            from ..verbs.drift import drift as drift_check
        except ImportError:
            if not self._no_drift:
                self._no_drift = True
                self.emit({"event": "drift_unavailable", "at": now_iso(),
                           "why": "this dreamlake has no drift check"})  # fmt: skip
            return
        for o in seen:
            if self.stop.is_set():
                return
            if not isinstance(o, Observation) or o.infra is None or not o.infra.present:
                continue
            try:
                res = drift_check(o.name, dream_dir=self.dream_dir, cwd=self.root.path)
            except Exception as exc:  # the check is the backend's; a failure is reported
                self.emit({"event": "drift", "provider": o.name, "error": str(exc),
                           "at": now_iso()})  # fmt: skip
                continue
            wire = res.to_wire()
            self.emit({"event": "drift", "provider": o.name, "status": res.status,
                       "drift": wire.get("drift"), "nextAction": wire.get("nextAction"),
                       "at": now_iso()})  # fmt: skip

    # -- publishing ----------------------------------------------------------------

    def _publish(self, cp: Any, seen: list[tuple[Seen, ProviderLifecycleResult]], at: str) -> int:
        """PUT each provider's ``observed`` document on its row; the number accepted."""
        from .publish import Publisher, observed_doc

        if not cp.url or not cp.token:
            return 0
        sent = 0
        pub = Publisher(cp)
        try:
            for s, res in seen:
                doc = observed_doc(res, s.target, at, self.holder)
                d = s.decision
                doc["step"] = {"step": d.step, "gated": d.gated, "does": d.do, "why": d.why}
                if d.gated and res is s.result:  # reported, not performed: what a person runs
                    doc["nextAction"] = self._next_action(s)
                code = pub.put(s.name, doc)
                if code is None:
                    return sent  # unreachable: not once per provider
                sent += code == 200
        finally:
            pub.close()
        return sent


def state_path(root: Root) -> Path:
    """Where the watcher keeps when the last drift pass ran (``.dream/watch.json``)."""
    return root.dream / "watch.json"


__all__ = ["Emit", "Watcher", "state_path"]
