"""Prose for a person: ✓ / ⚠ / ✗ lines, then a ``next:`` line. Plain strings, no
terminal library, so it is cheap and the same in a pipe."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from dreamlake.engine.contract.result import (
    Blocking,
    ClaimWorker,
    EditThenContinue,
    ProviderLifecycleResult,
    Run,
    Shell,
)

REASONS = {
    "unset": "not set",
    "placeholder": "still the template's placeholder",
    "invalid": "invalid",
    "conflict": "set twice with different values",
}


def show_path(p: str | Path, cwd: Path | None = None) -> str:
    """A path relative to cwd when it lies below it, else absolute."""
    path = Path(p)
    base = cwd or Path.cwd()
    try:
        return os.path.relpath(path, base) if path.is_relative_to(base) else str(path)
    except ValueError:
        return str(path)


def header(verb: str, name: str, root: Path, reason: str) -> str:
    return f"provider {verb} {name}\nroot: {root} ({reason})"


def _blocking_line(b: Blocking) -> str:
    label = b.key.replace("_", " ")
    reason = REASONS.get(b.reason, b.reason)
    if b.message and b.reason == "invalid":
        reason = f"invalid: {b.message}"
    elif b.message:
        reason = b.message
    text = f"   · {label} — {reason.rstrip('.')}"
    if b.observed:
        text += f". account has resources in {', '.join(b.observed)}"
    where = (
        f"{show_path(b.file)}:{b.line}"
        if b.file and b.line
        else (show_path(b.file) if b.file else "")
    )
    if where:
        text += f"  ({where})"
    if b.why:
        text += f"\n       {b.why}"
    return text


def _next(r: ProviderLifecycleResult) -> str:
    n = r.next_action
    if n is None:
        return "next: (none)"
    # The approval mark comes on top of what each kind says (the file to edit, the host).
    yes = f"needs a person's yes: {_vendor_words(r, n) or _what_it_does(n)}"
    if isinstance(n, EditThenContinue):
        line = f"next: edit {show_path(n.file)}, then {n.command}"
        return f"{line}   # {yes}" if n.approval else line
    if isinstance(n, Run):
        notes = []
        if r.status == "applying" and _tool(r) == "terraform" and " apply " in f"{n.command} ":
            notes.append("re-run; terraform resumes")  # the spec's line
        if n.approval:
            notes.append(yes)
        return f"next: {n.command}" + (f"   # {'; '.join(notes)}" if notes else "")
    assert isinstance(n, Shell)
    notes = [*([f"on {n.host}"] if n.host else []), *([yes] if n.approval else [])]
    return f"next: {n.command}" + (f"   # {'; '.join(notes)}" if notes else "")


_DOES = {
    "apply": "it creates or changes infrastructure, which spends money",
    "destroy": "it destroys the infrastructure and what it holds",
    "delete": "it deletes the provider's folder and its row",
    "suspend": "it suspends the provider (what that does is said above)",
    "resume": "it resumes the provider (what that does is said above)",
    "connect": "it starts a fresh daemon (the state the old one kept is gone)",
    "reconcile": "it performs the gated lifecycle step named above",
}


_VERB_STEP = {
    "apply": "provision",
    "connect": "provision",
    "destroy": "deprovision",
    "delete": "deprovision",
    "suspend": "suspend",
    "resume": "resume",
}


def _vendor_words(r: ProviderLifecycleResult, n: EditThenContinue | Run | Shell) -> str | None:
    """What the flagged step does on this provider's vendor, as its TEMPLATE.json
    declares it (``steps.<step>.does``); None when it declares nothing for it."""
    words = n.command.split()
    if not r.vendor or words[:2] != ["dreamlake", "provider"] or len(words) < 3:
        return None
    step = _VERB_STEP.get(words[2])
    if step is None:
        return None
    from dreamlake.engine.lifecycle.gating import verb_step
    from dreamlake.engine.world.vendors import find_template

    try:
        t = find_template(r.vendor)
    except Exception:  # a manifest that does not read: the general words
        return None
    if t is None:
        return None
    if words[2] in ("suspend", "resume"):
        step = verb_step(words[2], t.stateful_lifecycle) or step
    decl = (t.raw.get("steps") or {}).get(step) if isinstance(t.raw.get("steps"), dict) else None
    does = decl.get("does") if isinstance(decl, dict) else None
    return does if isinstance(does, str) and does else None


def _what_it_does(n: EditThenContinue | Run | Shell) -> str:
    """What the flagged step does, from its command: each gated step says its own."""
    words = n.command.split()
    if words[:2] == ["dreamlake", "provider"] and len(words) > 2 and words[2] in _DOES:
        return _DOES[words[2]]
    if words[:3] == ["lakeshore", "namespaces", "add"]:
        return "an admin's step on the control plane: it creates the namespace"
    if isinstance(n, Shell):
        return "it installs software on this machine"
    return "it spends or destroys money or data"


def _tool(r: ProviderLifecycleResult) -> str:
    """The infrastructure tool behind the result: terraform unless it says pulumi."""
    return "pulumi" if r.template is not None and r.template.backend == "pulumi" else "terraform"


def _age(since: str | None) -> str:
    if not since:
        return ""
    try:
        t = datetime.fromisoformat(since.replace("Z", "+00:00"))
    except ValueError:
        return ""
    secs = max(0, int((datetime.now(UTC) - t).total_seconds()))
    return f"{secs // 3600:02d}:{secs % 3600 // 60:02d}:{secs % 60:02d}"


def _body(r: ProviderLifecycleResult) -> list[str]:
    out: list[str] = []
    d = show_path(r.dir) if r.dir else ""
    s = r.status
    # The folder the backend's code is in, as the spec prints it: .../terraform/
    backend = r.template.backend if r.template else None
    sub = f"{backend}/" if backend in ("terraform", "pulumi") else ""
    own = bool(r.headline) and s in ("scaffolded", "unclaimed")
    if own:
        out.append(str(r.headline))  # a verb's own outcome (destroy) before the state it left
    if s in ("scaffolded", "needs_input") and r.files and not own:
        out.append(f"✓ scaffolded {d}/{sub}")
        out.append(f"   wrote {r.files[0]}")
        if len(r.files) > 1:
            out.append(f"   … {len(r.files) - 1} more")
    if s == "scaffolded":
        if not r.files and not own:
            out.append(f"✓ scaffolded {d}/{sub}")
        out.append("every decision in this template has a value.")
    elif s == "needs_input":
        if r.blocking:
            out.append("⚠ needs decisions before it can apply:")
            out.extend(_blocking_line(b) for b in r.blocking)
        else:
            out.append(r.headline or "⚠ needs your go-ahead: applying spends money")
    elif s == "ready":
        p = r.plan
        counts = f" — {p.add} to add, {p.change} to change, {p.destroy} to destroy" if p else ""
        out.append(f"✓ plan is clean{counts}")
        out.append("nothing has been applied. The next command spends money.")
    elif s == "applying":
        lk = r.lock
        op = lk.operation if lk and lk.operation and lk.operation != "unknown" else "apply"
        what = f"{'an' if op[:1] in 'aeiou' else 'a'} {op}"
        out.append(f"⚠ {what} is in progress or was interrupted")  # the spec's line
        if lk:
            who = f", by {lk.who}" if lk.who else ""
            age = _age(lk.since)
            where = show_path(lk.path) if lk.path else "the state"
            if lk.state == "held":
                out.append(f"{_tool(r)} holds a state lock ({where}, held {age or '?'}{who})")
            else:
                out.append(
                    f"an interrupted run left its lock or a partial state ({where}"
                    f"{', ' + age + ' ago' if age else ''}{who}); nothing holds it now"
                )
            if lk.detail:
                out.append(lk.detail)
    elif s == "applied":
        out.append(f"✓ applied — {_infra(r)}")
        out.append("no daemon claims it yet.")
    elif s == "connected":
        c = r.claim
        n = c.live if c else 0
        out.append(f"✓ connected — {n} live worker{'s' if n != 1 else ''} claiming '{r.provider}'")
        out.extend(_worker_line(w) for w in (c.workers or []) if c)
    elif s == "unclaimed":
        out.append(f"⚠ unclaimed — no daemon is claiming '{r.provider}'")
        out.append("this is a normal state, not a fault:")
        out.append("it means nothing can launch into this account right now.")
    elif s == "connecting":
        out.append(
            f"⚠ connecting — the daemon was started on {r.host or 'the host'}; no claim seen yet"
        )
    elif s == "exists":
        vendor = f" from vendor '{r.vendor}'" if r.vendor else ""
        out.append(r.headline or f"⚠ {d}/ already exists{vendor} — nothing was overwritten")
        if r.blocking:
            out.append("⚠ still needs decisions:")
            out.extend(_blocking_line(b) for b in r.blocking)
    elif s == "suspended":
        out.append(f"⏸ suspended — '{r.provider}' was stopped on purpose; its state is kept")
        out.append("nothing runs and no worker claims it. Resuming brings the same state back.")
    elif s == "error":
        out.append(f"✗ {r.error or 'failed'}")
    return out


def _worker_line(w: ClaimWorker) -> str:
    """``i-0abc… active 12s ago queues: gpu, cpu``, as the spec prints a worker."""
    wid = w.instance_id if len(w.instance_id) <= 14 else w.instance_id[:12] + "…"
    ago = _age(w.last_seen)
    since = ""
    if ago:
        h, m, s = (int(x) for x in ago.split(":"))
        secs = h * 3600 + m * 60 + s
        since = (
            f" {secs}s ago"
            if secs < 120
            else (f" {secs // 60}m ago" if secs < 7200 else f" {h}h ago")
        )
    host = f" on {w.host}" if w.host else ""
    queues = f" queues: {', '.join(w.queues)}" if w.queues else ""
    return f"{wid} {w.state or 'live'}{since}{host}{queues}"


def _infra(r: ProviderLifecycleResult) -> str:
    bits = []
    if r.resources is not None:
        bits.append(f"{r.resources} resource{'s' if r.resources != 1 else ''} in state")
    if r.outputs:
        host = r.outputs.get("worker_host")
        if host:
            bits.append(f"worker host {host}")
    return ", ".join(bits) or "infrastructure exists"


def render(r: ProviderLifecycleResult, *, with_identity: bool = True) -> str:
    lines: list[str] = []
    if with_identity and r.status != "error":
        if r.dir:
            lines.append(f"dir: {show_path(r.dir)}")
        if r.vendor:
            lines.append(f"vendor: {r.vendor}")
    lines += _body(r)
    # applied says it in its own first line
    if r.status in ("unclaimed", "connected") and (r.resources is not None or r.outputs):
        lines.append(f"infrastructure: {_infra(r)}")
    if r.supervisor:
        lines.append(f"supervisor: {r.supervisor}" + (f" on {r.host}" if r.host else ""))
    lines += _drift_lines(r)
    lines += [n for n in dict.fromkeys(r.notes) if n not in lines]
    if r.degraded:
        lines.append("degraded: " + ", ".join(r.degraded) + _degraded_hint(r.degraded, r.server))
    set_line = _set_hint(r)
    if set_line:
        lines.append(set_line)
    lines.append(_next(r))
    return "\n".join(lines)


def _drift_lines(r: ProviderLifecycleResult, shown: int = 10) -> list[str]:
    """What the last drift check found changed outside, one resource a line."""
    if not r.drift:
        return []
    n = len(r.drift)
    out = [
        f"⚠ drift — {n} resource{'s' if n != 1 else ''} changed outside since the state was "
        f"written (seen {r.drift[0].seen_at}):"
    ]
    for d in r.drift[:shown]:
        what = d.action or "changed"
        attrs = f": {', '.join(d.attributes)}" if d.attributes else ""
        out.append(f"   · {d.address} — {what}{attrs}")
    if n > shown:
        out.append(f"   … {n - shown} more")
    out.append("plan shows what an apply would put back.")
    return out


def _set_hint(r: ProviderLifecycleResult) -> str | None:
    """Decisions to settle: the same edit without an editor (``provider set``)."""
    n = r.next_action
    if not isinstance(n, EditThenContinue) or not r.blocking or not r.provider:
        return None
    import shlex

    try:
        words = shlex.split(n.command)
    except ValueError:
        return None
    where = ""
    if "--dream-dir" in words and words.index("--dream-dir") + 1 < len(words):
        where = f" --dream-dir {shlex.quote(words[words.index('--dream-dir') + 1])}"
    keys = " ".join(f"{k}=VALUE" for k in dict.fromkeys(b.key for b in r.blocking))
    return f"or set them from here: dreamlake provider set -n {r.provider}{where} {keys}"


def _degraded_hint(deg: list[str], server: str | None = None) -> str:
    hints = []
    if "no-credentials" in deg:
        hints.append("no cloud credentials found in the environment or a profile")
    if "no-probe" in deg:
        hints.append("no account probe ran, so no observed values")
    if "no-lakeshore" in deg:
        hints.append("control plane not reachable, claims unknown")
    if "lakeshore-untrusted" in deg and server:
        from dreamlake.engine.world.lakeshore import untrusted

        why = untrusted(server)  # what this process's request to it met
        if why:
            hints.append(f"{why}; see docs/deploy.md")
    if "drift" in deg:
        hints.append("the infrastructure changed outside its state")
    return f" ({'; '.join(hints)})" if hints else ""
